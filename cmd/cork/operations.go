package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// operationTable ends with REASON, the one column of free text, shortened
// like the REASON of actual-lrps; the JSON output has it whole.
var operationTable = table[*models.Operation]{
	headers: []string{"ID", "SEQ", "GUID", "KIND", "STATUS", "CREATED", "STARTED", "FINISHED", "LEASE", "REASON"},
	row: func(op *models.Operation) []string {
		return []string{
			op.GetId(), itoa(op.GetSequence()), op.GetProcessGuid(), op.GetKind().String(), op.GetStatus().String(),
			timestamp(op.GetCreatedAt()), timestamp(op.GetStartedAt()), timestamp(op.GetFinishedAt()),
			lease(op), shorten(op.GetReason(), maxReasonWidth),
		}
	},
}

// lease is who owns the lease of an operation that has not ended and
// until when, as "owner@expiry" (one word, so that the table splits on
// whitespace); an ended operation's lease is over whatever its row says.
func lease(op *models.Operation) string {
	if op.GetLeaseOwner() == "" || models.OperationEnded(op.GetStatus()) {
		return ""
	}
	return op.GetLeaseOwner() + "@" + timestamp(op.GetLeaseExpiresAt())
}

// historyTime shows when a history entry happened to the millisecond:
// several entries often fall in one second.
const historyTime = "2006-01-02T15:04:05.000Z07:00"

// historyTimestamp shows when a history entry happened (historyTime).
func historyTimestamp(unixNanos int64) string {
	return time.Unix(0, unixNanos).UTC().Format(historyTime)
}

// maxParametersWidth keeps the request shown in an operation's table to
// one readable line; the JSON output has it whole.
const maxParametersWidth = 120

// emitOperation prints one operation: a JSON line, or with -o table its
// fields, then its history as a timeline, one entry per line.
func (a *app) emitOperation(op *models.Operation) error {
	if a.format != formatTable {
		return printJSONLines(a.out, []*models.Operation{op})
	}
	if err := printTable(a.out, []string{"FIELD", "VALUE"}, operationFields(op)); err != nil {
		return err
	}
	history := make([][]string, 0, len(op.GetHistory()))
	for _, entry := range op.GetHistory() {
		history = append(history, []string{historyTimestamp(entry.GetAt()), oneLine(entry.GetMessage())})
	}
	fmt.Fprintln(a.out)
	return printTable(a.out, []string{"TIME", "HISTORY"}, history)
}

// operationFields lays an operation out as one field per row.
func operationFields(op *models.Operation) [][]string {
	leaseText := ""
	if l := lease(op); l != "" {
		leaseText = op.GetLeaseOwner() + " until " + timestamp(op.GetLeaseExpiresAt())
	}
	return [][]string{
		{"id", op.GetId()},
		{"process_guid", op.GetProcessGuid()},
		{"sequence", itoa(op.GetSequence())},
		{"kind", op.GetKind().String()},
		{"status", op.GetStatus().String()},
		{"definition_id", op.GetDefinitionId()},
		{"requested_by", oneLine(op.GetRequestedBy())},
		{"created_at", timestamp(op.GetCreatedAt())},
		{"started_at", timestamp(op.GetStartedAt())},
		{"finished_at", timestamp(op.GetFinishedAt())},
		{"lease", leaseText},
		{"reason", oneLine(op.GetReason())},
		{"blocked_by", blockedText(op.GetBlockedBy())},
		{"parameters", shorten(parameters(op.GetParameters()), maxParametersWidth)},
	}
}

// blockedText is an operation's blocked_by as blockedLine says it, ""
// when nothing blocks it.
func blockedText(b *models.BlockedBy) string {
	if b == nil {
		return ""
	}
	return blockedLine(b, time.Now())
}

// parametersJSON leaves out what the request did not set, unlike jsonLine:
// what fits in one table cell should be what the caller asked for.
var parametersJSON = protojson.MarshalOptions{UseProtoNames: true}

// parameters shows the request that made an operation as its message name
// and compact JSON, e.g. UpdateDesiredLRPRequest {"process_guid":"hello",…}.
func parameters(request *anypb.Any) string {
	if request == nil {
		return ""
	}
	message, err := request.UnmarshalNew()
	if err != nil {
		return request.GetTypeUrl()
	}
	encoded, err := parametersJSON.Marshal(message)
	if err != nil {
		return request.GetTypeUrl()
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, encoded); err != nil {
		return request.GetTypeUrl()
	}
	return string(message.ProtoReflect().Descriptor().Name()) + " " + compact.String()
}

func (a *app) operationsCommand() *cobra.Command {
	var (
		status, kind string
		limit        int
	)
	cmd := &cobra.Command{
		Use:   "operations [GUID] [--status S] [--kind K] [--limit N]",
		Short: "List operations (every change to a desired LRP), newest first",
		Long: `List operations, newest first: every desire, update, removal, rollback,
abort and cancel, with its status, of one LRP (GUID) or of all.

--status and --kind take the names the JSON shows, in any case
(--status in_progress, --kind update_definition). cork follows the board's
pages to the end unless --limit N asks for the newest N only.

With -o table: ID, SEQ (the LRP's operations are numbered 1, 2, 3, ...),
GUID, KIND, STATUS, when it was created, started and finished, LEASE (the
board working on an operation that has not ended and when its lease expires,
"board@expiry") and REASON on one line of at most 60 characters. The JSON has
every field whole, history included ('cork operation ID' shows one).
Statuses: ` + strings.ToLower(strings.Join(operationStatusNames(), ", ")) + `.
Kinds: ` + strings.ToLower(strings.Join(operationKindNames(), ", ")) + ".",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("operations wants at most 1 argument, GUID; got %d", len(args))
			}
			return nil
		},
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			var filter client.OperationFilter
			if len(args) == 1 {
				filter.ProcessGuid = args[0]
			}
			var err error
			if filter.Status, err = parseOperationStatus(status); err != nil {
				return err
			}
			if filter.Kind, err = parseOperationKind(kind); err != nil {
				return err
			}
			if cmd.Flags().Changed("limit") && limit < 1 {
				return usageErrorf("--limit must be at least 1, got %d", limit)
			}
			operations, err := a.listOperations(ctx, filter, limit)
			if err != nil {
				return err
			}
			return emit(a, operations, operationTable)
		}),
	}
	flags := cmd.Flags()
	flags.StringVar(&status, "status", "", "only operations with this status (pending, in_progress, finished, error, canceled, evicted)")
	flags.StringVar(&kind, "kind", "", "only operations of this kind (desire, update, update_definition, rollback, abort, remove, ...)")
	flags.IntVar(&limit, "limit", 0, "only the newest N operations (default: all)")
	return cmd
}

// listOperations reads the operations that match, newest first: every page
// when limit is 0, otherwise pages until it has limit of them.
func (a *app) listOperations(ctx context.Context, filter client.OperationFilter, limit int) ([]*models.Operation, error) {
	c := a.client()
	if limit == 0 {
		return c.AllOperations(ctx, filter)
	}
	var operations []*models.Operation
	for {
		filter.Limit = int32(min(limit-len(operations), models.MaxOperationsPage))
		page, next, err := c.Operations(ctx, filter)
		if err != nil {
			return nil, err
		}
		operations = append(operations, page...)
		if next == "" || len(operations) >= limit {
			return operations[:min(len(operations), limit)], nil
		}
		if next == filter.Cursor {
			return nil, fmt.Errorf("%s: board answered the cursor %q it was asked for: paging would not end", models.RouteOperations, next)
		}
		filter.Cursor = next
	}
}

func (a *app) operationCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "operation ID | operation cancel ID",
		Short: "Show one operation with its history, or cancel it",
		Long: `Show one operation with its history. With -o table: its fields, then its
history as a timeline, one entry per line (time to the millisecond, what
happened).

'cork operation cancel ID' cancels an operation that has not ended: a PENDING
one (a queued update) is CANCELED; an IN_PROGRESS rollout is aborted (an
ABORT operation rolls the LRP back to its healthy definition, start before
stop) and CANCELED. Canceling an operation that has ended fails
(InvalidStateTransition, exit 1).`,
		Args: exactArgs("ID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			op, err := a.client().Operation(ctx, args[0])
			if err != nil {
				return err
			}
			return a.emitOperation(op)
		}),
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel an operation that has not ended (a rollout rolls back)",
		Args:  exactArgs("ID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			op, err := a.client().CancelOperation(ctx, args[0])
			if err != nil {
				return err
			}
			return a.emitOperation(op)
		}),
	})
	return cmd
}

// parseOperationStatus reads --status: a status name in any case, "-" or
// "_" between words; "" for every status.
func parseOperationStatus(name string) (models.Operation_Status, error) {
	if name == "" {
		return models.Operation_STATUS_UNKNOWN, nil
	}
	value, ok := models.Operation_Status_value[enumName(name)]
	if !ok || value == int32(models.Operation_STATUS_UNKNOWN) {
		return 0, usageErrorf("--status %q is not an operation status; want one of %s", name, strings.ToLower(strings.Join(operationStatusNames(), ", ")))
	}
	return models.Operation_Status(value), nil
}

// parseOperationKind reads --kind like parseOperationStatus reads --status.
func parseOperationKind(name string) (models.Operation_Kind, error) {
	if name == "" {
		return models.Operation_KIND_UNKNOWN, nil
	}
	value, ok := models.Operation_Kind_value[enumName(name)]
	if !ok || value == int32(models.Operation_KIND_UNKNOWN) {
		return 0, usageErrorf("--kind %q is not an operation kind; want one of %s", name, strings.ToLower(strings.Join(operationKindNames(), ", ")))
	}
	return models.Operation_Kind(value), nil
}

func enumName(name string) string {
	return strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(name), "-", "_"))
}

// operationStatusNames lists the statuses a filter can name, in their
// order (the unset value aside).
func operationStatusNames() []string {
	var names []string
	for value := int32(1); ; value++ {
		name, ok := models.Operation_Status_name[value]
		if !ok {
			return names
		}
		names = append(names, name)
	}
}

// operationKindNames lists the kinds a filter can name, in their order.
func operationKindNames() []string {
	var names []string
	for value := int32(1); ; value++ {
		name, ok := models.Operation_Kind_name[value]
		if !ok {
			return names
		}
		names = append(names, name)
	}
}

// requestedBy is how cork names its user to the board, recorded in the
// operations cork's writes make: "cork (alice@laptop)". The board adds
// the address the request came from.
func requestedBy() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return "cork (" + name + "@" + host + ")"
}

// printOperationID follows the table of a write with the id of the
// operation that recorded it, for 'cork operation ID'. JSON output stays
// what the board answered.
// warn prints a warning from the board, if any, to stderr.
func (a *app) warn(warning string) {
	if warning != "" && a.errOut != nil {
		fmt.Fprintf(a.errOut, "cork: warning: %s\n", warning)
	}
}

func (a *app) printOperationID(id string) {
	if a.format == formatTable && id != "" {
		fmt.Fprintf(a.out, "operation: %s\n", id)
	}
}
