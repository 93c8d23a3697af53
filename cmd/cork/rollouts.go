package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

var rolloutStatusTable = table[*models.RolloutStatus]{
	headers: []string{"PROCESS_GUID", "STATE", "ACTIVE", "HEALTHY", "UPDATED", "IN_FLIGHT", "DEFINITIONS", "DEADLINE", "REASON"},
	row: func(s *models.RolloutStatus) []string {
		return []string{
			s.GetProcessGuid(), s.GetState().String(), s.GetActiveDefinitionId(), s.GetHealthyDefinitionId(),
			fmt.Sprintf("%d/%d", s.GetUpdatedInstances(), s.GetInstances()), itoa(s.GetInFlight()),
			definitionCounts(s), timestamp(s.GetDeadlineAt()), s.GetReason(),
		}
	},
}

// definitionCounts writes "v2:3/3 v1:3/2": instances and, of those,
// running and routable, per definition, newest first.
func definitionCounts(s *models.RolloutStatus) string {
	parts := make([]string, 0, len(s.GetDefinitions()))
	for _, d := range s.GetDefinitions() {
		parts = append(parts, fmt.Sprintf("%s:%d/%d", d.GetDefinitionId(), d.GetInstances(), d.GetRunning()))
	}
	return strings.Join(parts, " ")
}

func (a *app) rolloutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout status|rollback|abort GUID",
		Short: "Follow and steer the rolling update of an LRP",
		Args:  exactArgs(),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			return usageErrorf("rollout needs a subcommand: status, rollback or abort")
		}),
	}
	cmd.AddCommand(a.rolloutStatusCommand(), a.rollbackCommand(), a.abortRolloutCommand())
	return cmd
}

func (a *app) rolloutStatusCommand() *cobra.Command {
	var watch bool
	cmd := &cobra.Command{
		Use:   "status GUID [--watch]",
		Short: "Where the LRP's rolling update stands",
		Long: `Where the LRP's rolling update stands: its state (NONE, PROGRESSING,
COMPLETE, FAILED, REVERTED), the active and healthy definitions, how many
indices run the active definition and are ready (UPDATED), the replacements
under way (IN_FLIGHT), instances per definition (id:instances/running), the
deadline by which an index must complete, and why.

--watch prints the status again whenever it changes, following the board's
event stream, until the rollout is over: exit 0 when it is COMPLETE (or
REVERTED and back on the healthy definition), 1 when it FAILED.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			if !watch {
				status, err := a.client().RolloutStatus(ctx, args[0])
				if err != nil {
					return err
				}
				return emit(a, []*models.RolloutStatus{status}, rolloutStatusTable)
			}
			return a.watchRollout(ctx, args[0])
		}),
	}
	cmd.Flags().BoolVar(&watch, "watch", false, "print the status whenever it changes, until the rollout is over")
	return cmd
}

// watchRollout prints the status, then again after every event about the
// LRP that changes it, until the rollout is over or Ctrl-C.
func (a *app) watchRollout(ctx context.Context, guid string) error {
	var last *models.RolloutStatus
	show := func() (over bool, err error) {
		status, err := a.client().RolloutStatus(ctx, guid)
		if err != nil {
			return true, err
		}
		if !proto.Equal(status, last) {
			if err := emit(a, []*models.RolloutStatus{status}, rolloutStatusTable); err != nil {
				return true, err
			}
			if err := a.out.Flush(); err != nil {
				return true, err
			}
			last = status
		}
		return rolloutOver(status)
	}
	if over, err := show(); over {
		return err
	}
	// The stream opens before the status is read again, so that no
	// change between that read and the stream goes unseen.
	stream, err := a.client().Events(ctx, client.EventsOptions{Types: []string{
		models.EventRolloutChanged, models.EventActualLRPCreated, models.EventActualLRPChanged,
		models.EventActualLRPRemoved, models.EventActualLRPCrashed,
	}})
	if err != nil {
		return err
	}
	defer stream.Close()
	for {
		over, err := show()
		if ctx.Err() != nil {
			return nil
		}
		if over {
			return err
		}
		if err := nextEventAbout(stream, guid); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// rolloutOver reports whether a watch is done, and with what outcome.
func rolloutOver(s *models.RolloutStatus) (bool, error) {
	switch s.GetState() {
	case models.RolloutStatus_NONE, models.RolloutStatus_COMPLETE:
		return true, nil
	case models.RolloutStatus_REVERTED:
		return s.GetFinishedAt() != 0, nil
	case models.RolloutStatus_FAILED:
		return true, errors.New("rollout failed: " + s.GetReason())
	}
	return false, nil
}

// nextEventAbout waits for the next event about the LRP.
func nextEventAbout(stream *client.EventStream, guid string) error {
	for {
		event, err := stream.Next()
		if err != nil {
			return err
		}
		if event.Type == models.EventEventsLost || eventGuid(event.Payload) == guid {
			return nil
		}
	}
}

func eventGuid(payload proto.Message) string {
	switch p := payload.(type) {
	case *models.RolloutChangedEvent:
		return p.GetStatus().GetProcessGuid()
	case *models.ActualLRPCreatedEvent:
		return p.GetActualLrp().GetProcessGuid()
	case *models.ActualLRPChangedEvent:
		return p.GetAfter().GetProcessGuid()
	case *models.ActualLRPRemovedEvent:
		return p.GetActualLrp().GetProcessGuid()
	case *models.ActualLRPCrashedEvent:
		return p.GetActualLrp().GetProcessGuid()
	}
	return ""
}

func (a *app) rollbackCommand() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "rollback GUID [--to DEFINITION_ID]",
		Short: "Re-activate a kept definition; instances roll back to it start-before-stop",
		Long: `Re-activate a kept definition (see 'cork definitions GUID'); the instances
roll back to it the same start-before-stop way as any rollout. Without --to:
the healthy definition while a rollout is under way or failed, otherwise the
newest kept definition older than the active one.`,
		Args: exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			status, err := a.client().Rollback(ctx, args[0], to)
			if err != nil {
				return err
			}
			return emit(a, []*models.RolloutStatus{status}, rolloutStatusTable)
		}),
	}
	cmd.Flags().StringVar(&to, "to", "", "the definition id to go back to")
	return cmd
}

func (a *app) abortRolloutCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "abort GUID",
		Short: "Roll back to the healthy definition",
		Args:  exactArgs("GUID"),
		RunE: a.runE(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			status, err := a.client().AbortRollout(ctx, args[0])
			if err != nil {
				return err
			}
			return emit(a, []*models.RolloutStatus{status}, rolloutStatusTable)
		}),
	}
}
