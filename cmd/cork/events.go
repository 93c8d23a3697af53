package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

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
		Short: "Follow the board's events, one JSON line each, until Ctrl-C",
		Long: `Follow the board's events, one JSON line each, until Ctrl-C:

  {"id":1754321234567890,"type":"actual_lrp_changed","data":{"before":{...},"after":{...}}}

--type narrows to some event types (repeat it, or separate them with commas).
--last-event-id resumes after that event; when the board no longer keeps what
followed it, the first line is an events_lost event (id 0): re-read the state
you follow. If the board ends the stream, cork exits 1 and says which id to
resume from. Event types: ` + strings.Join(models.EventTypes(), ", ") + ".",
		Args: exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if a.format != formatJSON {
				return usageErrorf("events prints JSON lines only; -o %s does not apply", a.format)
			}
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
		if err := a.printEvent(event); err != nil {
			return err
		}
	}
}

func (a *app) printEvent(event client.Event) error {
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
