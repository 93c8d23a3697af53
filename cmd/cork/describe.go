package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// describeOperations is how many of the LRP's newest operations a
// description shows: enough for the last few changes and what became of
// them; 'cork operations GUID' lists them all.
const describeOperations = 10

// lrpDescription is everything cork describe shows of one LRP, as the
// board answered it.
type lrpDescription struct {
	lrp *models.DesiredLRP
	// definitions are the stored ones, newest first.
	definitions []*models.DefinitionSummary
	// runs are what each definition runs ("./hello --port 8080"), by id:
	// a summary does not carry its action.
	runs       map[string]string
	actualLRPs []*models.ActualLRP
	rollout    *models.RolloutStatus
	// operations are the newest describeOperations, newest first.
	operations []*models.Operation
	// cells are those the instances are placed on, for their zones.
	cells []*models.Cell
	// cellsRefused is the board's answer when it would not list the cells
	// (cells/list is for operators only on a board with client
	// certificates); the page goes on without zones.
	cellsRefused error
	// group is the budget group the LRP names, nil when it names none or
	// one that is not defined.
	group *models.BudgetGroup
}

func (a *app) describeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "describe GUID",
		Short: "Show everything about one LRP: state, strategy, definitions, instances, rollout, autoscaler, operations",
		Long: `Show everything about one LRP on one page: the desired state, the update
strategy as the board applies it (every default filled in, a percent followed
by the count it comes to), the rollout, the autoscaler's last decision, the
stored definitions (newest first, with their instances and running ones, the
active and healthy marks and what they run), the instances (cell, zone,
definition, and why one is not running: its crash, why it has no cell, or a
stop requested), and the newest ` + itoa(int32(describeOperations)) + ` operations, each followed by its history.

The zones come from the cells list, which a board with client certificates
shows to operators only: with another certificate the instances are shown
without zones, and the page says so.

-o json prints one JSON object, each part as the commands that show it alone
print it: {"desired_lrp": …, "definitions": […], "actual_lrps": […],
"rollout": …, "operations": […], "cells": […]}; "cells" holds the cells the
instances are on, or is null with "cells_refused" saying why.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			d, err := a.describe(ctx, args[0])
			if err != nil {
				return err
			}
			if a.format == formatTable {
				return writeDescription(a.out, d, time.Now())
			}
			return writeDescriptionJSON(a.out, d)
		}),
	}
}

// describe reads what a description shows, the LRP first: an unknown guid
// is the board's ResourceNotFound before anything else is asked.
func (a *app) describe(ctx context.Context, guid string) (*lrpDescription, error) {
	c := a.client()
	lrp, err := c.DesiredLRPByProcessGuid(ctx, guid)
	if err != nil {
		return nil, err
	}
	d := &lrpDescription{lrp: lrp, runs: map[string]string{}}
	if d.definitions, err = c.Definitions(ctx, guid); err != nil {
		return nil, err
	}
	d.runs[lrp.GetActiveDefinitionId()] = runText(lrp.GetDefinition())
	for _, summary := range d.definitions {
		id := summary.GetDefinitionId()
		if _, known := d.runs[id]; known {
			continue
		}
		definition, err := c.Definition(ctx, guid, id)
		if models.IsErrorType(err, models.Error_ResourceNotFound) {
			continue // pruned since the list: it has no row to show.
		}
		if err != nil {
			return nil, err
		}
		d.runs[id] = runText(definition)
	}
	if d.actualLRPs, err = c.ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: guid}); err != nil {
		return nil, err
	}
	if d.rollout, err = c.RolloutStatus(ctx, guid); err != nil {
		return nil, err
	}
	if d.operations, err = a.listOperations(ctx, client.OperationFilter{ProcessGuid: guid}, describeOperations); err != nil {
		return nil, err
	}
	if name := lrp.GetDisruptionBudget().GetGroup(); name != "" {
		groups, err := c.BudgetGroups(ctx)
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			if g.GetName() == name {
				d.group = g
			}
		}
	}
	cells, err := c.Cells(ctx)
	switch {
	case models.IsErrorType(err, models.Error_Unauthorized):
		d.cellsRefused = err
	case err != nil:
		return nil, err
	default:
		d.cells = cellsOf(cells, d.actualLRPs)
	}
	return d, nil
}

// cellsOf keeps the cells that instances are placed on, in the order of
// the board's list.
func cellsOf(cells []*models.Cell, instances []*models.ActualLRP) []*models.Cell {
	used := map[string]bool{}
	for _, instance := range instances {
		used[instance.GetCellId()] = true
	}
	kept := []*models.Cell{}
	for _, cell := range cells {
		if used[cell.GetCellId()] {
			kept = append(kept, cell)
		}
	}
	return kept
}

// runText is what a definition runs: its action's path and arguments.
func runText(d *models.LRPDefinition) string {
	return strings.Join(append([]string{d.GetAction().GetPath()}, d.GetAction().GetArgs()...), " ")
}

// writeDescriptionJSON prints the description as one compact JSON object
// whose parts are protojson as the other commands print them.
func writeDescriptionJSON(w io.Writer, d *lrpDescription) error {
	var page struct {
		DesiredLRP   json.RawMessage   `json:"desired_lrp"`
		Definitions  []json.RawMessage `json:"definitions"`
		ActualLRPs   []json.RawMessage `json:"actual_lrps"`
		Rollout      json.RawMessage   `json:"rollout"`
		Operations   []json.RawMessage `json:"operations"`
		Cells        []json.RawMessage `json:"cells"`
		CellsRefused string            `json:"cells_refused,omitempty"`
	}
	var err error
	if page.DesiredLRP, err = jsonLine.Marshal(d.lrp); err != nil {
		return err
	}
	if page.Rollout, err = jsonLine.Marshal(d.rollout); err != nil {
		return err
	}
	if page.Definitions, err = rawMessages(d.definitions); err != nil {
		return err
	}
	if page.ActualLRPs, err = rawMessages(d.actualLRPs); err != nil {
		return err
	}
	if page.Operations, err = rawMessages(d.operations); err != nil {
		return err
	}
	if d.cellsRefused != nil {
		page.CellsRefused = d.cellsRefused.Error()
	} else if page.Cells, err = rawMessages(d.cells); err != nil {
		return err
	}
	encoded, err := json.Marshal(page)
	if err != nil {
		return err
	}
	// protojson varies its whitespace on purpose (see printJSONLines).
	var line bytes.Buffer
	if err := json.Compact(&line, encoded); err != nil {
		return err
	}
	line.WriteByte('\n')
	_, err = w.Write(line.Bytes())
	return err
}

// rawMessages is items as protojson, [] rather than null for none, so
// that every part of the page is there for a script.
func rawMessages[T proto.Message](items []T) ([]json.RawMessage, error) {
	raw := make([]json.RawMessage, 0, len(items))
	for _, item := range items {
		encoded, err := jsonLine.Marshal(item)
		if err != nil {
			return nil, err
		}
		raw = append(raw, encoded)
	}
	return raw, nil
}

// writeDescription prints the description as a page for people: the LRP
// as "Field: value" lines, then the definitions, the instances and the
// operations as tables under their headings. Times to come ("deadline in
// 9m12s") are counted from now.
func writeDescription(w io.Writer, d *lrpDescription, now time.Time) error {
	var page bytes.Buffer
	if err := printFields(&page, describeFields(d, now)); err != nil {
		return err
	}
	sections := []struct {
		heading string
		write   func(io.Writer) error
	}{
		{"Definitions (newest first):", func(w io.Writer) error { return printTable(w, definitionHeaders, definitionRows(d)) }},
		{"Instances:", func(w io.Writer) error { return writeInstances(w, d) }},
		{fmt.Sprintf("Operations (newest first, at most %d):", describeOperations), func(w io.Writer) error { return writeOperations(w, d.operations) }},
	}
	for _, section := range sections {
		fmt.Fprintf(&page, "\n%s\n", section.heading)
		var body bytes.Buffer
		if err := section.write(&body); err != nil {
			return err
		}
		indent(&page, body.String(), "  ")
	}
	_, err := w.Write(page.Bytes())
	return err
}

// describeFields are the lines at the top of a description.
func describeFields(d *lrpDescription, now time.Time) [][]string {
	lrp := d.lrp
	instances := itoa(lrp.GetInstances())
	if lrp.GetAutoscaling().IsEnabled() {
		instances += " (autoscaled: " + autoscaleCell(lrp.GetAutoscaling()) + ")"
	}
	fields := [][]string{
		{"Name:", lrp.GetProcessGuid()},
		{"Domain:", lrp.GetDomain()},
		{"Created:", timestamp(lrp.GetCreatedAt())},
		{"Instances:", instances},
		{"Active:", lrp.GetActiveDefinitionId()},
		{"Healthy:", lrp.GetHealthyDefinitionId()},
		{"Strategy:", strings.Join(effectiveStrategyFields(lrp.GetInstances(), lrp.GetUpdateStrategy()), " ")},
		{"Budget:", effectiveBudget(lrp)},
		{"Budget group:", budgetGroupLine(lrp, d.group)},
		{"Routes:", routesText(lrp)},
		{"Placement tags:", strings.Join(lrp.GetPlacementTags(), ",")},
		{"Annotation:", oneLine(lrp.GetAnnotation())},
		{"Rollout:", rolloutLine(d.rollout, now)},
	}
	if b := d.rollout.GetBlockedBy(); b != nil {
		fields = append(fields, []string{"Blocked:", blockedLine(b, now)})
	} else if op := validating(d.operations); op.GetBlockedBy() != nil {
		// A validation has no rollout yet: its operation says what holds it.
		fields = append(fields, []string{"Blocked:", "validation of " + op.GetDefinitionId() + ": " + blockedLine(op.GetBlockedBy(), now)})
	}
	if stage := stageCell(d.rollout, now); stage != "" {
		fields = append(fields, []string{"Stage:", stage})
	}
	if lrp.GetAutoscaling() != nil {
		fields = append(fields, []string{"Autoscaling:", autoscalingLine(lrp.GetAutoscaling())})
	}
	if line := autoscalerLine(lrp); line != "" {
		fields = append(fields, []string{"Autoscaler:", line})
	}
	return fields
}

// validating is the VALIDATE operation of operations that is under way,
// nil when none is. Without a rollout it is still validating, and its
// blocked_by is its validation's.
func validating(operations []*models.Operation) *models.Operation {
	for _, op := range operations {
		if op.GetKind() == models.Operation_VALIDATE && op.GetStatus() == models.Operation_IN_PROGRESS {
			return op
		}
	}
	return nil
}

// printFields writes "Name:  value" lines, the values aligned.
func printFields(w io.Writer, fields [][]string) error {
	var rows bytes.Buffer
	for _, field := range fields {
		fmt.Fprintf(&rows, "%s\t%s\n", field[0], orDash(field[1:])[0])
	}
	t := newAlignedWriter(w)
	if _, err := t.Write(rows.Bytes()); err != nil {
		return err
	}
	return t.Flush()
}

// routesText shows the routes as the spec gives them, compact JSON.
func routesText(lrp *models.DesiredLRP) string {
	if lrp.GetRoutes() == nil {
		return ""
	}
	encoded, err := parametersJSON.Marshal(lrp.GetRoutes())
	if err != nil {
		return ""
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, encoded); err != nil {
		return ""
	}
	return compact.String()
}

// rolloutLine is where the rollout stands in one line, e.g.
// "PROGRESSING 2/4 updated, 1 in flight, deadline in 9m12s — rolling from
// v1 to v2". The deadline is counted from now; "NONE" without a rollout.
func rolloutLine(s *models.RolloutStatus, now time.Time) string {
	line := s.GetState().String()
	if s.GetState() == models.RolloutStatus_NONE {
		return line
	}
	line += fmt.Sprintf(" %d/%d updated, %d in flight", s.GetUpdatedInstances(), s.GetInstances(), s.GetInFlight())
	if deadline := deadlineText(s, now); deadline != "" {
		line += ", " + deadline
	}
	if s.GetFailedDefinitionId() != "" {
		line += ", failed definition " + s.GetFailedDefinitionId()
	}
	if s.GetReason() != "" {
		line += " — " + oneLine(s.GetReason())
	}
	return line
}

// deadlineText is "deadline in 9m12s" (to the second, counted from now),
// "deadline passed", or "" when the rollout has no deadline.
func deadlineText(s *models.RolloutStatus, now time.Time) string {
	if s.GetDeadlineAt() == 0 {
		return ""
	}
	left := time.Unix(0, s.GetDeadlineAt()).Sub(now).Round(time.Second)
	if left <= 0 {
		return "deadline passed"
	}
	return "deadline in " + left.String()
}

var definitionHeaders = []string{"DEFINITION_ID", "CREATED", "INSTANCES", "RUNNING", "MARKS", "MEMORY_MB", "DISK_MB", "RUN"}

// definitionRows are the stored definitions, newest first, with their
// instances and, of those, running and routable ones (the rollout's
// counts), and what they run last: the one column of free text.
func definitionRows(d *lrpDescription) [][]string {
	counts := map[string]*models.DefinitionInstances{}
	for _, c := range d.rollout.GetDefinitions() {
		counts[c.GetDefinitionId()] = c
	}
	rows := make([][]string, 0, len(d.definitions))
	for _, summary := range d.definitions {
		id := summary.GetDefinitionId()
		var marks []string
		if summary.GetActive() {
			marks = append(marks, "active")
		}
		if summary.GetHealthy() {
			marks = append(marks, "healthy")
		}
		rows = append(rows, []string{
			id, timestamp(summary.GetCreatedAt()), itoa(counts[id].GetInstances()), itoa(counts[id].GetRunning()),
			strings.Join(marks, ","), itoa(summary.GetMemoryMb()), itoa(summary.GetDiskMb()),
			shorten(d.runs[id], maxReasonWidth),
		})
	}
	return rows
}

// writeInstances writes the instances' table, with each one's zone when
// the board listed the cells, and otherwise a line saying why not.
func writeInstances(w io.Writer, d *lrpDescription) error {
	zones := map[string]string{}
	for _, cell := range d.cells {
		zones[cell.GetCellId()] = cell.GetZone()
	}
	withZones := d.cellsRefused == nil
	headers := []string{"INDEX", "PRESENCE", "STATE", "CELL"}
	if withZones {
		headers = append(headers, "ZONE")
	}
	headers = append(headers, "DEFINITION", "ROUTABLE", "OCCUPIED", "CRASHES", "SINCE", "REASON")
	rows := make([][]string, 0, len(d.actualLRPs))
	for _, lrp := range d.actualLRPs {
		row := []string{itoa(lrp.GetIndex()), lrp.GetPresence().String(), lrp.GetState().String(), lrp.GetCellId()}
		if withZones {
			row = append(row, zones[lrp.GetCellId()])
		}
		row = append(row, lrp.GetDefinitionId(), yesNo(lrp.GetRoutable()), yesNo(lrp.GetOccupied()),
			itoa(lrp.GetCrashCount()), timestamp(lrp.GetSince()), shorten(instanceReason(lrp), maxReasonWidth))
		rows = append(rows, row)
	}
	if err := printTable(w, headers, rows); err != nil {
		return err
	}
	if !withZones {
		_, err := fmt.Fprintf(w, "(no zones: the board did not list the cells to this certificate: %s)\n", oneLine(d.cellsRefused.Error()))
		return err
	}
	return nil
}

// instanceReason is why an instance is not serving, or is on its way
// out: its crash, why it has no cell (actualLRPReason), or that the board
// asked its rep to stop it.
func instanceReason(lrp *models.ActualLRP) string {
	reasons := []string{}
	if why := actualLRPReason(lrp); why != "" {
		reasons = append(reasons, why)
	}
	if lrp.GetStopRequested() {
		reasons = append(reasons, "stop requested")
	}
	return strings.Join(reasons, "; ")
}

var describeOperationHeaders = []string{"ID", "KIND", "STATUS", "CREATED", "DURATION", "REQUESTED_BY"}

// writeOperations writes the operations' table, each row followed by the
// operation's history, one entry a line, indented under it, and by its
// reason when the history does not end with it.
func writeOperations(w io.Writer, operations []*models.Operation) error {
	rows := make([][]string, 0, len(operations))
	for _, op := range operations {
		rows = append(rows, []string{
			op.GetId(), op.GetKind().String(), op.GetStatus().String(), timestamp(op.GetCreatedAt()),
			operationDuration(op), oneLine(op.GetRequestedBy()),
		})
	}
	// The table is aligned as a whole first: a history line between two
	// rows would end tabwriter's columns there.
	var aligned bytes.Buffer
	if err := printTable(&aligned, describeOperationHeaders, rows); err != nil {
		return err
	}
	lines := strings.SplitAfter(aligned.String(), "\n")
	var page strings.Builder
	page.WriteString(lines[0])
	for i, op := range operations {
		page.WriteString(lines[i+1])
		history := op.GetHistory()
		for _, entry := range history {
			fmt.Fprintf(&page, "    %s  %s\n", historyTimestamp(entry.GetAt()), oneLine(entry.GetMessage()))
		}
		reason := oneLine(op.GetReason())
		if reason != "" && (len(history) == 0 || oneLine(history[len(history)-1].GetMessage()) != reason) {
			fmt.Fprintf(&page, "    reason: %s\n", reason)
		}
	}
	_, err := io.WriteString(w, page.String())
	return err
}

// operationDuration is how long an operation that ended took, from its
// creation (a queued one waited too) to the millisecond; "" while it has
// not ended.
func operationDuration(op *models.Operation) string {
	if op.GetFinishedAt() == 0 || op.GetCreatedAt() == 0 {
		return ""
	}
	return time.Duration(op.GetFinishedAt() - op.GetCreatedAt()).Round(time.Millisecond).String()
}

// indent writes text with prefix before each of its lines.
func indent(w io.Writer, text, prefix string) {
	for _, line := range strings.SplitAfter(text, "\n") {
		if line != "" {
			io.WriteString(w, prefix+line)
		}
	}
}
