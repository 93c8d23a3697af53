package models

import (
	"errors"
	"fmt"
)

// Error makes *Error a Go error, so the db layer can return the same value
// the handlers put in a response body.
func (e *Error) Error() string {
	return e.GetType().String() + ": " + e.GetMessage()
}

// NewError builds an Error of the given type with a formatted message.
func NewError(t Error_Type, format string, args ...any) *Error {
	return &Error{Type: t, Message: fmt.Sprintf(format, args...)}
}

// ErrInvalidField is an InvalidRequest naming the offending field.
func ErrInvalidField(field, reason string) *Error {
	return &Error{Type: Error_InvalidRequest, Message: field + ": " + reason}
}

// ConvertError returns err as an *Error, wrapping unknown errors as
// UnknownError so that every response carries a typed error.
func ConvertError(err error) *Error {
	if err == nil {
		return nil
	}
	var modelErr *Error
	if errors.As(err, &modelErr) {
		return modelErr
	}
	return &Error{Type: Error_UnknownError, Message: err.Error()}
}

// ErrorTypeOf is the type of err, UnknownError for foreign errors, and
// UnknownError with ok=false for nil.
func ErrorTypeOf(err error) (t Error_Type, ok bool) {
	if err == nil {
		return Error_UnknownError, false
	}
	return ConvertError(err).GetType(), true
}

// IsErrorType reports whether err is a model error of type t.
func IsErrorType(err error, t Error_Type) bool {
	got, ok := ErrorTypeOf(err)
	return ok && got == t
}
