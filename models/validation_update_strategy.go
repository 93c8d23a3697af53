package models

import (
	"fmt"
	"strconv"
	"strings"
)

// Validate checks an update strategy. max_surge and max_unavailable are
// each empty (the default), a count such as "2", or a percent of the
// instances such as "25%" (0-100). Both zero is allowed: the rollout then
// surges by one.
func (s *UpdateStrategy) Validate() error {
	return s.validate("")
}

func (s *UpdateStrategy) validate(path string) error {
	if err := validateCountOrPercent(child(path, "max_surge"), s.GetMaxSurge()); err != nil {
		return err
	}
	if err := validateCountOrPercent(child(path, "max_unavailable"), s.GetMaxUnavailable()); err != nil {
		return err
	}
	if err := validateMillis(child(path, "min_ready_ms"), s.GetMinReadyMs(), MaxMinReadyMs); err != nil {
		return err
	}
	if err := validateMillis(child(path, "progress_deadline_ms"), s.GetProgressDeadlineMs(), MaxProgressDeadlineMs); err != nil {
		return err
	}
	return validateNotNegative(child(path, "history_limit"), int64(s.GetHistoryLimit()))
}

// MaxCountOrPercentLength bounds a count or percent as written: the
// columns that keep one (a disruption budget's, a budget group's) are
// VARCHAR(16), and no count the board can act on needs more digits.
const MaxCountOrPercentLength = 16

func validateCountOrPercent(path, value string) error {
	if value == "" {
		return nil
	}
	if len(value) > MaxCountOrPercentLength {
		return ErrInvalidField(path, fmt.Sprintf("must be at most %d characters, got %d", MaxCountOrPercentLength, len(value)))
	}
	if _, _, ok := ParseCountOrPercent(value); !ok {
		return ErrInvalidField(path, `must be a count like "2" or a percent like "25%" (0-100%), got `+quoteShort(value))
	}
	return nil
}

// ParseCountOrPercent reads "3" as (3, false) and "25%" as (25, true), as
// max_surge and max_unavailable are written.
// Only plain decimal digits are accepted: no sign, spaces or fractions.
func ParseCountOrPercent(value string) (n int, percent bool, ok bool) {
	digits, percent := strings.CutSuffix(value, "%")
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		// Only overflow gets here: the digits were checked above.
		return 0, false, false
	}
	if percent && n > 100 {
		return 0, false, false
	}
	return n, percent, true
}
