package models

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names: the identifiers a client picks and the board stores in key and
// filter columns (process and instance guids, definition ids, cell ids,
// domains, zones, placement tags, the rep URL a cell registers).
//
// A name must mean the same on every database the board runs on, so every
// name is valid UTF-8 (Postgres and MySQL refuse anything else, SQLite
// stores it), printable (Postgres refuses NUL; a control or invisible
// character makes two names look alike in logs and tables), and does not
// start or end with a space (MariaDB's PAD SPACE collations make "apps "
// equal "apps", the other databases do not). Case is kept and compared
// exactly everywhere: "Web" and "web" are two names on every database
// (MySQL's columns are utf8mb4_bin).
//
// The guids, ids and cell ids also match a pattern; the name rule runs
// first, so that these common mistakes get a clear reason rather than the
// pattern.

// ValidateName checks value against the rules every name follows, naming
// field in the error. The store uses it too, for callers that skip the
// API's validation.
func ValidateName(field, value string) error {
	return validateName(field, value)
}

func validateName(path, value string) error {
	if !utf8.ValidString(value) {
		at := invalidUTF8At(value)
		return ErrInvalidField(path, "must be valid UTF-8, got "+quoteShort(value)+position(value, at, value[at:at+1]))
	}
	if at := strings.IndexFunc(value, notPrintable); at >= 0 {
		_, size := utf8.DecodeRuneInString(value[at:])
		return ErrInvalidField(path, "must be printable, got "+quoteShort(value)+position(value, at, value[at:at+size]))
	}
	if strings.HasPrefix(value, " ") || strings.HasSuffix(value, " ") {
		return ErrInvalidField(path, "must not start or end with a space, got "+quoteShort(value))
	}
	return nil
}

// notPrintable is true for what a name may not hold: control and format
// characters, and every space but the ASCII one (unicode.IsPrint).
func notPrintable(r rune) bool {
	return !unicode.IsPrint(r)
}

// invalidUTF8At is the byte offset of the first byte that is not part of
// valid UTF-8 in value, which holds one.
func invalidUTF8At(value string) int {
	for at := 0; at < len(value); {
		r, size := utf8.DecodeRuneInString(value[at:])
		if r == utf8.RuneError && size <= 1 {
			return at
		}
		at += size
	}
	return len(value)
}

// position says where the offending part is when quoteShort cut the value
// before it, so that a long name's error still shows what is wrong.
func position(value string, at int, bad string) string {
	if len(value) <= quoteLimit {
		return ""
	}
	return fmt.Sprintf(" (%q at byte %d)", bad, at)
}

// PrintableText is text made safe to show a person in one line: every
// byte that is not valid UTF-8 becomes \xNN and every rune that is not
// printable (control and format characters, and spaces other than the
// ASCII one) becomes \uNNNN; the rest stays as it is. Error messages pass
// through it, since decoders echo the bytes they refuse.
func PrintableText(text string) string {
	if utf8.ValidString(text) && strings.IndexFunc(text, notPrintable) < 0 {
		return text
	}
	var b strings.Builder
	for at := 0; at < len(text); {
		r, size := utf8.DecodeRuneInString(text[at:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, text[at])
		case notPrintable(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(text[at : at+size])
		}
		at += size
	}
	return b.String()
}

// Text a process is given: what the rep passes to exec and writes to
// disk for an instance. The kernel cannot pass NUL in a path, an argument
// or an environment entry (every start would fail), and a control
// character (C0, DEL, C1) in a path, a directory, an environment name or a
// file name is never meant and garbles every log and table that shows it.
// Two rules, each a function here:
//
//   - validateNoControl, for paths, directories, environment names, asset
//     destinations and URLs, and the HTTP health check path: valid UTF-8
//     and no control character at all;
//   - validateTextLines, for arguments and environment values, which hold
//     scripts, JSON and certificates: the same, but tab, line feed and
//     carriage return are allowed.
//
// Both report invalid UTF-8 first, as "must be valid UTF-8".

func validateNoControl(path, value string) error {
	return validateControl(path, value, false)
}

func validateTextLines(path, value string) error {
	return validateControl(path, value, true)
}

func validateControl(path, value string, lines bool) error {
	if err := validateUTF8(path, value); err != nil {
		return err
	}
	at := strings.IndexFunc(value, func(r rune) bool {
		if lines && (r == '\t' || r == '\n' || r == '\r') {
			return false
		}
		return unicode.IsControl(r)
	})
	if at < 0 {
		return nil
	}
	_, size := utf8.DecodeRuneInString(value[at:])
	reason := "must not hold control characters"
	if lines {
		reason = "must not hold control characters other than tab, line feed and carriage return"
	}
	return ErrInvalidField(path, fmt.Sprintf("%s, got %q at byte %d", reason, value[at:at+size], at))
}
