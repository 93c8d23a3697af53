package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// eventLine is how cork prints an event: its payload as the data, in the
// same JSON as every other cork output.
type eventLine struct {
	ID   uint64          `json:"id"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

func (a *app) eventsCommand() *cobra.Command {
	var options client.EventsOptions
	cmd := &cobra.Command{
		Use:   "events [--type T]... [--last-event-id N]",
		Short: "Follow the board's events, one JSON line each (or table row), until Ctrl-C",
		Long: `Follow the board's events, one JSON line each, until Ctrl-C:

  {"id":55491,"type":"actual_lrp_changed","data":{"before":{...},"after":{...}}}

The id is the event's position in the board's event log.

-o table prints a row per event instead: ID, TYPE, ABOUT (the process guid,
or the cell id of cell_changed) and DETAIL, what changed in one line, e.g.
"0189f3a2b4c5d6e7a1b2c3d4 #3 UPDATE_DEFINITION IN_PROGRESS" for an
operation_changed. The header is printed again when a column has to widen.

--type narrows to some event types (repeat it, or separate them with commas).
--last-event-id resumes after that event; when the board no longer keeps what
followed it, the first line is an events_lost event (id 0): re-read the state
you follow. If the board ends the stream, cork exits 1 and says which id to
resume from. Event types: ` + strings.Join(models.EventTypes(), ", ") + ".",
		Args: exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			for _, t := range options.Types {
				if models.NewEventPayload(t) == nil {
					return usageErrorf("--type %q is not an event type; want one of %s", t, strings.Join(models.EventTypes(), ", "))
				}
			}
			return a.followEvents(ctx, options)
		}),
	}
	flags := cmd.Flags()
	flags.StringSliceVar(&options.Types, "type", nil, "only events of this type (repeatable)")
	flags.Uint64Var(&options.LastEventID, "last-event-id", 0, "resume after the event with this id")
	return cmd
}

// followEvents prints events until Ctrl-C (a success) or the stream ends
// (a failure that says where to resume).
func (a *app) followEvents(ctx context.Context, options client.EventsOptions) error {
	stream, err := a.client().Events(ctx, options)
	if err != nil {
		return err
	}
	defer stream.Close()
	rows := &tableStream{out: a.out, headers: []string{"ID", "TYPE", "ABOUT", "DETAIL"}}
	for {
		event, err := stream.Next()
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, client.ErrStreamEnded) && stream.LastEventID() != 0 {
			return fmt.Errorf("%w; resume with --last-event-id %d", err, stream.LastEventID())
		}
		if err != nil {
			return err
		}
		if err := a.printEvent(rows, event); err != nil {
			return err
		}
	}
}

func (a *app) printEvent(rows *tableStream, event client.Event) error {
	if a.format == formatTable {
		about, detail := describeEvent(event.Payload)
		if err := rows.add([]string{strconv.FormatUint(event.ID, 10), event.Type, about, shorten(detail, maxEventDetailWidth)}); err != nil {
			return err
		}
		return a.out.Flush()
	}
	data := json.RawMessage("null")
	if event.Payload != nil {
		encoded, err := jsonLine.Marshal(event.Payload)
		if err != nil {
			return err
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, encoded); err != nil {
			return err
		}
		data = compact.Bytes()
	}
	line, err := json.Marshal(eventLine{ID: event.ID, Type: event.Type, Data: data})
	if err != nil {
		return err
	}
	a.out.Write(line)
	a.out.WriteByte('\n')
	// Someone is watching: every event goes out as it comes.
	return a.out.Flush()
}

// maxEventDetailWidth keeps an event's row on one line; the JSON output has
// the whole payload.
const maxEventDetailWidth = 100

// describeEvent says in a few words what an event is about and what it
// says: the guid (or cell id), and the fields a person follows. An event
// type this cork does not know has no payload and is described by its type
// alone.
func describeEvent(payload proto.Message) (about, detail string) {
	switch p := payload.(type) {
	case *models.DesiredLRPCreatedEvent:
		return p.GetDesiredLrp().GetProcessGuid(), desiredLRPDetail(p.GetDesiredLrp())
	case *models.DesiredLRPChangedEvent:
		return p.GetAfter().GetProcessGuid(), desiredLRPDetail(p.GetAfter())
	case *models.DesiredLRPRemovedEvent:
		return p.GetDesiredLrp().GetProcessGuid(), desiredLRPDetail(p.GetDesiredLrp())
	case *models.ActualLRPCreatedEvent:
		return p.GetActualLrp().GetProcessGuid(), actualLRPDetail(p.GetActualLrp())
	case *models.ActualLRPChangedEvent:
		return p.GetAfter().GetProcessGuid(), actualLRPDetail(p.GetAfter())
	case *models.ActualLRPRemovedEvent:
		return p.GetActualLrp().GetProcessGuid(), actualLRPDetail(p.GetActualLrp())
	case *models.ActualLRPCrashedEvent:
		return p.GetActualLrp().GetProcessGuid(), fmt.Sprintf("index %d crash %d: %s", p.GetActualLrp().GetIndex(), p.GetCrashCount(), p.GetCrashReason())
	case *models.CellChangedEvent:
		c := p.GetAfter()
		return c.GetCellId(), fmt.Sprintf("zone %s present %s draining %s", c.GetZone(), yesNo(c.GetPresent()), yesNo(c.GetDraining()))
	case *models.RolloutChangedEvent:
		s := p.GetStatus()
		return s.GetProcessGuid(), fmt.Sprintf("%s %d/%d on %s: %s", s.GetState(), s.GetUpdatedInstances(), s.GetInstances(), s.GetActiveDefinitionId(), s.GetReason())
	case *models.OperationChangedEvent:
		op := p.GetOperation()
		detail := fmt.Sprintf("%s #%d %s %s", op.GetId(), op.GetSequence(), op.GetKind(), op.GetStatus())
		if op.GetReason() != "" {
			detail += ": " + op.GetReason()
		}
		return op.GetProcessGuid(), detail
	case *models.EventsLostEvent:
		return "", fmt.Sprintf("events after %d are no longer kept; the oldest kept is %d: re-read the state you follow", p.GetLastEventId(), p.GetOldestKeptId())
	}
	return "", ""
}

func desiredLRPDetail(lrp *models.DesiredLRP) string {
	return fmt.Sprintf("%d instances of %s", lrp.GetInstances(), lrp.GetActiveDefinitionId())
}

func actualLRPDetail(lrp *models.ActualLRP) string {
	detail := fmt.Sprintf("index %d %s %s %s", lrp.GetIndex(), lrp.GetPresence(), lrp.GetState(), lrp.GetDefinitionId())
	if lrp.GetCellId() != "" {
		detail += " on " + lrp.GetCellId()
	}
	return detail
}
