package migrations

import (
	"fmt"
	"strings"
)

// splitStatements cuts a migration file into single statements at the
// semicolons outside quotes and comments, dropping comment-only pieces.
// Statements run one by one, so no driver needs a multi-statement mode and an
// error names the statement that failed. Dollar-quoted bodies (Postgres
// functions) are not supported; a migration that needs one uses a Go step.
func splitStatements(text string) ([]string, error) {
	var out []string
	var cur strings.Builder
	hasCode := false
	flush := func() {
		if hasCode {
			out = append(out, strings.TrimSpace(cur.String()))
		}
		cur.Reset()
		hasCode = false
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			end := strings.IndexByte(text[i:], '\n')
			if end < 0 {
				end = len(text) - i
			}
			cur.WriteString(text[i : i+end])
			i += end - 1
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("unterminated /* comment")
			}
			cur.WriteString(text[i : i+2+end+2])
			i += 2 + end + 1
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for ; j < len(text); j++ {
				if text[j] == '\\' && c == '\'' {
					j++
					continue
				}
				if text[j] == c {
					if j+1 < len(text) && text[j+1] == c { // doubled quote
						j++
						continue
					}
					break
				}
			}
			if j >= len(text) {
				return nil, fmt.Errorf("unterminated %c quote", c)
			}
			cur.WriteString(text[i : j+1])
			hasCode = true
			i = j
		case c == ';':
			flush()
		default:
			cur.WriteByte(c)
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				hasCode = true
			}
		}
	}
	flush()
	return out, nil
}
