package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// The operations scenario: the time to list a large operation log page by
// page through the real HTTP API, as `cork operations` does. The log is
// seeded straight into the table (ended operations of many LRPs, each
// with a request and a two-line history, as a desire and an update leave
// them), then listed whole -runs times, -page operations a call.

type operationsConfig struct {
	target     target
	operations int
	lrps       int
	page       int
	runs       int
}

func runOperations(ctx context.Context, args []string) error {
	var cfg operationsConfig
	flags := flag.NewFlagSet("bbs-load operations", flag.ExitOnError)
	cfg.target.register(flags)
	flags.IntVar(&cfg.operations, "operations", 100000, "operations in the log")
	flags.IntVar(&cfg.lrps, "lrps", 10000, "LRPs they are spread over")
	flags.IntVar(&cfg.page, "page", models.MaxOperationsPage, "operations a list call asks for")
	flags.IntVar(&cfg.runs, "runs", 3, "how many times to list the whole log")
	flags.Parse(args)

	d, err := openFreshDatabase(ctx, cfg.target.driver, cfg.target.dsn)
	if err != nil {
		return err
	}
	defer d.close()
	fmt.Printf("# bbs-load operations, driver %s, %d operations of %d LRPs, pages of %d, %d cores\n",
		d.driver, cfg.operations, cfg.lrps, cfg.page, numCPU())

	began := time.Now()
	if err := seedOperations(ctx, newSeeder(d), cfg.operations, cfg.lrps); err != nil {
		return err
	}
	step("seeded %d operations in %s (set-up, not measured)", cfg.operations, seconds(time.Since(began)))

	b, err := startBoard(d.store, d.hub)
	if err != nil {
		return err
	}
	defer b.stop()
	api := client.New(b.url)
	runs := &latencies{}
	for range cfg.runs {
		began := time.Now()
		all, err := api.AllOperations(ctx, client.OperationFilter{Limit: int32(cfg.page)})
		if err != nil {
			return err
		}
		runs.add(time.Since(began))
		if len(all) != cfg.operations {
			return fmt.Errorf("listed %d operations, want %d", len(all), cfg.operations)
		}
		for i := 1; i < len(all); i++ {
			if all[i-1].GetId() <= all[i].GetId() {
				return fmt.Errorf("operations %d and %d out of order: %s, %s", i-1, i, all[i-1].GetId(), all[i].GetId())
			}
		}
	}
	step("verified: every operation listed once, newest first, %d runs", cfg.runs)
	worst := runs.percentile(1)
	figure("operations.list", d.driver,
		fmt.Sprintf("%d operations of %d LRPs over HTTP, pages of %d, %d runs", cfg.operations, cfg.lrps, cfg.page, cfg.runs),
		fmt.Sprintf("whole log p50 %s max %s", seconds(runs.percentile(0.5)), seconds(worst)),
		"< 1s", worst < time.Second)
	return nil
}

// seedOperations inserts n ended operations spread over lrps LRPs, the
// newest last, as a desire and updates would have left them.
func seedOperations(ctx context.Context, s *seeder, n, lrps int) error {
	request, err := anypb.New(&models.UpdateDesiredLRPRequest{
		ProcessGuid: "seeded",
		Update:      &models.DesiredLRPUpdate{Instances: proto.Int32(3)},
	})
	if err != nil {
		return err
	}
	parameters, err := proto.Marshal(request)
	if err != nil {
		return err
	}
	start := time.Now().Add(-time.Hour)
	history, err := proto.Marshal(&models.OperationHistory{Events: []*models.OperationEvent{
		{At: start.UnixNano(), Message: "instances 2 → 3"},
		{At: start.UnixNano(), Message: "finished"},
	}})
	if err != nil {
		return err
	}
	columns := []string{"id", "process_guid", "sequence", "kind", "status", "reason", "parameters", "definition_id",
		"requested_by", "created_at", "started_at", "finished_at", "history", "ended", "modification_index"}
	return s.insertRows(ctx, "operations", columns, n, func(i int, args []any) []any {
		at := start.Add(time.Duration(i) * time.Millisecond)
		lrp := i % lrps
		return append(args, models.NewOperationID(at), fmt.Sprintf("ops-%06d", lrp), int64(i/lrps+1),
			models.Operation_UPDATE.String(), models.Operation_FINISHED.String(), "", parameters, "",
			"bbs-load", at.UnixNano(), at.UnixNano(), at.UnixNano(), history, true, int64(1))
	})
}
