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

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

const (
	formatJSON  = "json"
	formatTable = "table"
)

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

func printTable(out io.Writer, headers []string, rows [][]string) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join(headers, "\t"))
	for _, row := range rows {
		fmt.Fprintln(w, strings.Join(orDash(row), "\t"))
	}
	return w.Flush()
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

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func itoa[N ~int32 | ~uint32 | ~int64](n N) string {
	return strconv.FormatInt(int64(n), 10)
}
