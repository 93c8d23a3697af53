package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/corkboard/corkboard/models"
)

// A rollout watch on a terminal draws one line and rewrites it in place,
// a progress bar with the clocks moving; anywhere else (a pipe, a file) it
// prints a line per change, which a script or a log can read.

// terminalFunc says whether cork's output is a terminal and, if so, how
// many columns wide it is now (it may be resized during a watch).
type terminalFunc func() (width int, ok bool)

// defaultTerminalWidth is the width of a terminal that does not say.
const defaultTerminalWidth = 80

// terminalOf is the terminalFunc of stdout: a terminal only when it is
// the file of one.
func terminalOf(stdout io.Writer) terminalFunc {
	f, ok := stdout.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func() (int, bool) { return 0, false }
	}
	fd := int(f.Fd())
	return func() (int, bool) {
		width, _, err := term.GetSize(fd)
		if err != nil || width <= 0 {
			width = defaultTerminalWidth
		}
		return width, true
	}
}

const (
	// clearToEndOfLine is the terminal's "erase in line" (ANSI EL 0): what
	// a shorter line leaves of a longer one goes.
	clearToEndOfLine = "\x1b[K"
	// barCells is the progress bar's width when the line has room for
	// it; minBarCells the narrowest it gets before parts of the line go.
	barCells    = 20
	minBarCells = 5
)

// progressLine is the one line a watch rewrites on a terminal.
type progressLine struct {
	// out writes as it is (rawWriter): the line's own \r and erase; what
	// the line says is made printable first.
	out      io.Writer
	terminal terminalFunc
	// started is when the watch began: the clock of a status that has no
	// rollout start to count from.
	started time.Time
	status  *models.RolloutStatus
}

// draw rewrites the line with the last status, its clocks at now.
func (p *progressLine) draw(now time.Time) error {
	width, _ := p.terminal()
	// One column short of the width: some terminals wrap a line that
	// fills the last column, and the next \r would rewrite only the wrap.
	text := progressText(p.status, p.started, now, width-1)
	_, err := io.WriteString(p.out, "\r"+printable(text)+clearToEndOfLine)
	return err
}

// end draws the line a last time and leaves it, followed by how the
// rollout ended when it ended well; an outcome with its own exit code
// says so on stderr instead.
func (p *progressLine) end(now time.Time, outcome error) error {
	if err := p.draw(now); err != nil {
		return err
	}
	text := "\n"
	if outcome == nil {
		text += printable(endedWell(p.status)) + "\n"
	}
	_, err := io.WriteString(p.out, text)
	return err
}

// interrupted ends a watch that Ctrl-C stopped: the line is left as it
// stands, so that the shell's prompt starts on a line of its own. A nil
// line (no terminal) has nothing to leave.
func (p *progressLine) interrupted() error {
	if p == nil {
		return nil
	}
	_, err := io.WriteString(p.out, "\n")
	return err
}

// endedWell is the last line of a watch that exits 0.
func endedWell(s *models.RolloutStatus) string {
	if s.GetState() == models.RolloutStatus_NONE {
		return "no rollout under way"
	}
	line := "rollout " + strings.ToLower(s.GetState().String())
	if s.GetReason() != "" {
		line += ": " + oneLine(s.GetReason())
	}
	return line
}

// progressText is a status as one line of at most width characters, e.g.
//
//	hello  PROGRESSING  [██████████░░░░░░░░░░]  2/4 updated  1 in flight  elapsed 12s  deadline in 9m48s
//
// A staged phase adds the share it allows now and its target after the
// counts ("share 12.4% of 50%", one decimal as in STAGE).
// The bar has barCells cells when the line fits; otherwise it narrows,
// down to minBarCells, and when that is not enough the parts after the
// counts go, the deadline first, each time with the widest bar that fits;
// and last the line is cut. The elapsed time runs from the rollout's
// start (or from started, the watch's, without one) to its end or now.
func progressText(s *models.RolloutStatus, started, now time.Time, width int) string {
	if s.GetStartedAt() != 0 {
		started = time.Unix(0, s.GetStartedAt())
	}
	if s.GetFinishedAt() != 0 {
		now = time.Unix(0, s.GetFinishedAt())
	}
	elapsed := max(0, now.Sub(started)).Round(time.Second)
	head := []string{s.GetProcessGuid(), s.GetState().String()}
	counts := fmt.Sprintf("%d/%d updated", s.GetUpdatedInstances(), s.GetInstances())
	var optional []string
	if stage := s.GetStage(); stage != nil {
		optional = append(optional, "share "+formatPercent(math.Round(stage.GetSharePercent()*10)/10)+" of "+formatPercent(stage.GetTargetPercent()))
	}
	optional = append(optional, fmt.Sprintf("%d in flight", s.GetInFlight()), "elapsed "+elapsed.String())
	if deadline := deadlineText(s, now); deadline != "" {
		optional = append(optional, deadline)
	}
	line := func(cells int, optional []string) string {
		parts := append(append(head, "["+progressBar(s.GetUpdatedInstances(), s.GetInstances(), cells)+"]", counts), optional...)
		return strings.Join(parts, "  ")
	}
	for kept := len(optional); kept >= 0; kept-- {
		for cells := barCells; cells >= minBarCells; cells-- {
			if text := line(cells, optional[:kept]); utf8.RuneCountInString(text) <= width {
				return text
			}
		}
	}
	// Cut as shorten does, but keeping the two spaces between parts.
	runes := []rune(line(minBarCells, nil))
	return strings.TrimRight(string(runes[:max(width-1, 0)]), " ") + "…"
}

// progressBar draws updated of instances in cells cells, rounding down:
// 2 of 4 in 20 cells fills 2*20/4 = 10; 1 of 3 fills 20/3 = 6. More
// updated than instances (a scale-down under way) fills the bar.
func progressBar(updated, instances int32, cells int) string {
	filled := 0
	if instances > 0 {
		filled = min(cells, int(updated)*cells/int(instances))
	}
	return strings.Repeat("█", filled) + strings.Repeat("░", cells-filled)
}
