package main

import (
	"fmt"
	"io"
	"strings"
)

// screenWriter writes what cork prints for people with every control
// character but newline and tab shown as an escape (\x1b, \r, \u009b)
// rather than sent: a crash reason, an annotation or an operation's
// reason is whatever an app or a client put there, and an escape sequence
// in one would otherwise drive the operator's terminal (retitle it, clear
// it, recolour what follows, move the cursor over other lines). In JSON
// output the encoder escapes the C0 controls; DEL and C1 are escaped here
// as JSON escapes them, so a line stays JSON; `cork logs` writes an
// instance's log as it is (printRaw), as its app wrote it.
type screenWriter struct {
	w io.Writer
	// pending is a 0xC2 that ended the last write: the first byte of
	// what may be a C1 control (U+0080-U+009F) split across two writes.
	pending bool
}

func (s *screenWriter) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p)+8)
	i := 0
	if s.pending {
		s.pending = false
		if len(p) > 0 && isC1Second(p[0]) {
			out = append(out, escaped(rune(p[0]))...)
			i = 1
		} else {
			out = append(out, 0xc2)
		}
	}
	for ; i < len(p); i++ {
		b := p[i]
		switch {
		case b == '\n' || b == '\t':
			out = append(out, b)
		case b < 0x20 || b == 0x7f:
			out = append(out, escaped(rune(b))...)
		case b == 0xc2 && i+1 == len(p):
			s.pending = true
		case b == 0xc2 && isC1Second(p[i+1]):
			out = append(out, escaped(rune(p[i+1]))...)
			i++
		default:
			out = append(out, b)
		}
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// isC1Second says whether b, after 0xC2, makes a C1 control.
func isC1Second(b byte) bool { return b >= 0x80 && b <= 0x9f }

// escaped is a control character as Go writes it in a quoted string, but
// DEL and the C1 controls as JSON does (\u007f, \u009b): JSON encoders
// escape the C0 controls themselves but leave those in strings as they
// are, and a JSON line must stay JSON once they are escaped here.
func escaped(r rune) string {
	if r >= 0x7f {
		return fmt.Sprintf(`\u%04x`, r)
	}
	switch r {
	case '\r':
		return `\r`
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\v':
		return `\v`
	}
	return fmt.Sprintf(`\x%02x`, r)
}

// printable is text as screenWriter would show it, for what is written
// past it (a watch's line, which carries control sequences of its own).
func printable(text string) string {
	var b strings.Builder
	screen := &screenWriter{w: &b}
	screen.Write([]byte(text)) //nolint:errcheck // a strings.Builder does not fail
	if screen.pending {
		b.WriteByte(0xc2)
	}
	return b.String()
}

// rawWriter writes as it is, after what app.out holds: an instance's log
// (cork logs), a watch's line with its own control sequences.
type rawWriter struct{ a *app }

func (r rawWriter) Write(p []byte) (int, error) {
	if err := r.a.out.Flush(); err != nil {
		return 0, err
	}
	return r.a.screen.w.Write(p)
}
