// Package hack holds what the doc-session test needs outside its specs:
// reading the shell sessions out of the Markdown docs.
package hack

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A Session is one shell block of a page: a fence whose language is sh,
// console, shell or bash. The doc-session test (docsessions_test.go) runs
// every session against a cluster started by make run, command after
// command in one shell, and stops at the first command that fails.
type Session struct {
	Page string // the page's path, as given to ParseSessions
	Line int    // the line of the opening fence, from 1
	// Skip is why the session does not run against make run, from a
	// "<!-- session: skip: REASON -->" line just before the fence; empty
	// when it runs.
	Skip     string
	Commands []Command
}

// A Command is one command of a session, continuation lines joined.
type Command struct {
	Line int    // its first line in the page, from 1
	Text string // as written, lines joined with "\n"
	// ExitCode is the exit code it must end with: 0 unless its last line
	// says "# => exit N" (or "# => exit N: TEXT").
	ExitCode int
	// Expect is text its output (stdout and stderr) must contain: what
	// follows "# => " (or "# => exit N: ") on its last line; empty checks
	// only the exit code.
	Expect string
}

var (
	fenceOpen   = regexp.MustCompile("^```([a-z]*)")
	skipMarker  = regexp.MustCompile(`^<!-- session: skip: (.+?) -->$`)
	expectation = regexp.MustCompile(` # => (.*)$`)
	exitExpect  = regexp.MustCompile(`^exit ([0-9]+)(?:: (.*))?$`)
	shellFences = map[string]bool{"sh": true, "console": true, "shell": true, "bash": true}
)

// ParseSessions reads the sessions of a Markdown page.
//
// In a console block a command is a line starting with "$ " (the prompt
// is not part of it) and the lines that follow a trailing backslash; the
// other lines are what it printed once, for the reader, and are not
// compared. In an sh block (and shell, bash) every line is a command, or
// its continuation, but for blank lines and comment lines. In both, a
// command's last line may end with "# => TEXT": its output must contain
// TEXT; "# => exit N: TEXT" also says it must exit N (a shell ignores the
// comment, so the line still copies as it is).
//
// Worked example, a page holding
//
//	<!-- session: skip: needs make run-tls -->
//	```sh
//	export BBS_URL=https://127.0.0.1:8889
//	```
//	```console
//	$ bin/cork ping   # => pong
//	$ bin/cork get nobody \
//	    -o table      # => exit 1: ResourceNotFound
//	cork: ResourceNotFound: …
//	```
//
// gives two sessions: 1. the first skipped for "needs make run-tls", with
// one command; 2. the second with "bin/cork ping   # => pong", expecting
// exit 0 and "pong", and the two-line get, expecting exit 1 and
// "ResourceNotFound" (the output line after it is the reader's alone).
func ParseSessions(page, markdown string) ([]Session, error) {
	var sessions []Session
	lines := strings.Split(markdown, "\n")
	skip := ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := skipMarker.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			skip = m[1]
			continue
		}
		m := fenceOpen.FindStringSubmatch(line)
		if m == nil {
			if strings.TrimSpace(line) != "" {
				skip = ""
			}
			continue
		}
		// A fence: find its end.
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("%s:%d: a fence that never closes", page, i+1)
		}
		if shellFences[m[1]] {
			s := Session{Page: page, Line: i + 1, Skip: skip}
			cmds, err := parseCommands(page, lines[i+1:end], i+2, m[1] == "console")
			if err != nil {
				return nil, err
			}
			s.Commands = cmds
			sessions = append(sessions, s)
		} else if skip != "" {
			return nil, fmt.Errorf("%s:%d: a skip marker before a block that is no shell session (%q)", page, i+1, m[1])
		}
		skip = ""
		i = end
	}
	return sessions, nil
}

// parseCommands reads the commands of a block whose first line is the
// page's line first.
func parseCommands(page string, block []string, first int, console bool) ([]Command, error) {
	var cmds []Command
	for j := 0; j < len(block); j++ {
		line := block[j]
		if console {
			if !strings.HasPrefix(line, "$ ") {
				continue
			}
			line = strings.TrimPrefix(line, "$ ")
		} else if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		c := Command{Line: first + j}
		text := []string{line}
		for strings.HasSuffix(line, `\`) {
			j++
			if j == len(block) {
				return nil, fmt.Errorf("%s:%d: a continuation that never ends", page, c.Line)
			}
			line = block[j]
			text = append(text, line)
		}
		c.Text = strings.Join(text, "\n")
		if m := expectation.FindStringSubmatch(line); m != nil {
			c.Expect = strings.TrimSpace(m[1])
			if e := exitExpect.FindStringSubmatch(c.Expect); e != nil {
				code, err := strconv.Atoi(e[1])
				if err != nil || code > 255 {
					return nil, fmt.Errorf("%s:%d: exit code %q", page, c.Line, e[1])
				}
				c.ExitCode, c.Expect = code, strings.TrimSpace(e[2])
			}
		}
		cmds = append(cmds, c)
	}
	return cmds, nil
}
