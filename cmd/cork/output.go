package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

const (
	formatJSON  = "json"
	formatTable = "table"
	// formatWide is a table with more columns, for the commands whose
	// Annotations have wideAnnotation (actual-lrps).
	formatWide = "wide"
	// formatAddress and formatPid print one value an instance a line, for
	// scripts and the docs' sessions: its host:port (the first port's) or
	// its pid (actual-lrps, as -o wide).
	formatAddress = "address"
	formatPid     = "pid"
)

// wideAnnotation marks a command that has -o wide, -o address and -o pid.
const wideAnnotation = "cork.wide"

// jsonLine prints messages as single-line protojson with the proto field
// names; default values are included so that, say, index 0 is not missing.
var jsonLine = protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}

// table renders items of one kind for people.
type table[T proto.Message] struct {
	headers []string
	row     func(T) []string
}

// emit prints items in the chosen format: one JSON line per item, or a table
// with a header line.
func emit[T proto.Message](a *app, items []T, t table[T]) error {
	if a.format == formatTable {
		rows := make([][]string, 0, len(items))
		for _, item := range items {
			rows = append(rows, t.row(item))
		}
		return printTable(a.out, t.headers, rows)
	}
	return printJSONLines(a.out, items)
}

// printJSONLines writes one compact JSON object per line. protojson varies
// its whitespace on purpose; compacting it keeps the output the same from
// build to build, so that scripts may grep it.
func printJSONLines[T proto.Message](w io.Writer, items []T) error {
	var line bytes.Buffer
	for _, item := range items {
		encoded, err := jsonLine.Marshal(item)
		if err != nil {
			return err
		}
		line.Reset()
		if err := json.Compact(&line, encoded); err != nil {
			return err
		}
		line.WriteByte('\n')
		if _, err := w.Write(line.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// columnGap is the space between two columns of a table.
const columnGap = 2

func printTable(out io.Writer, headers []string, rows [][]string) error {
	w := newAlignedWriter(out)
	fmt.Fprintln(w, strings.Join(headers, "\t"))
	for _, row := range rows {
		fmt.Fprintln(w, strings.Join(orDash(row), "\t"))
	}
	return w.Flush()
}

// newAlignedWriter aligns tab-separated cells in columns columnGap apart.
func newAlignedWriter(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 0, 4, columnGap, ' ', 0)
}

// tableStream prints the rows of one table as they come, for a watch. It
// cannot align a row with rows it has not seen, as printTable does, so it
// keeps the widest cell of each column so far and prints the header again
// only when a row needs a column wider than that: a watch reads as one
// table until a cell outgrows its column.
type tableStream struct {
	out     io.Writer
	headers []string
	// widths are those of every column but the last, which is not padded.
	widths []int
}

func (t *tableStream) add(row []string) error {
	row = orDash(row)
	grown := t.widths == nil
	if grown {
		t.widths = make([]int, len(t.headers)-1)
		for i := range t.widths {
			t.widths[i] = utf8.RuneCountInString(t.headers[i])
		}
	}
	for i := range t.widths {
		if n := utf8.RuneCountInString(row[i]); n > t.widths[i] {
			t.widths[i] = n
			grown = true
		}
	}
	var text strings.Builder
	if grown {
		t.writeLine(&text, t.headers)
	}
	t.writeLine(&text, row)
	_, err := io.WriteString(t.out, text.String())
	return err
}

func (t *tableStream) writeLine(text *strings.Builder, cells []string) {
	for i, cell := range cells {
		text.WriteString(cell)
		if i < len(t.widths) {
			text.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(cell)+columnGap))
		}
	}
	text.WriteByte('\n')
}

// orDash puts "-" in empty cells, so every row has every column and the
// table splits on whitespace.
func orDash(cells []string) []string {
	for i, c := range cells {
		if c == "" {
			cells[i] = "-"
		}
	}
	return cells
}

// timestamp shows Unix nanoseconds as UTC RFC 3339; 0 is unset.
func timestamp(unixNanos int64) string {
	if unixNanos == 0 {
		return ""
	}
	return time.Unix(0, unixNanos).UTC().Format(time.RFC3339)
}

// shorten makes text fit one table cell: one line, its runs of whitespace
// (newlines and tabs among them) one space each, and at most width
// characters, the last of them an ellipsis when it had to be cut.
func shorten(text string, width int) string {
	text = oneLine(text)
	runes := []rune(text)
	if len(runes) <= width {
		return text
	}
	return string(runes[:width-1]) + "…"
}

// oneLine puts text on one line: its runs of whitespace, newlines and tabs
// among them, one space each.
func oneLine(text string) string {
	return strings.Join(strings.Fields(text), " ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func itoa[N ~int32 | ~uint32 | ~int64](n N) string {
	return strconv.FormatInt(int64(n), 10)
}
