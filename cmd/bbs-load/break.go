package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/corkboard/corkboard/db/dialect"
)

// breakInstances makes b's instances missing, crashed and extra with bulk
// statements, in one transaction (set-up, not measured). Crashed rows look
// as CrashActualLRP leaves them: CRASHED, crash count 1, not routable, no
// net info, a new modification index.
func (s *seeder) breakInstances(ctx context.Context, b breakage) error {
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for index, guids := range byIndex(b.missing) {
		for batch := range slices.Chunk(guids, 1000) {
			query := "DELETE FROM actual_lrps WHERE presence = 'ORDINARY' AND instance_index = ? AND process_guid IN " + inList(len(batch))
			if _, err := tx.ExecContext(ctx, dialect.Rebind(dialect.Name(s.driver), query), append([]any{index}, stringArgs(batch)...)...); err != nil {
				return fmt.Errorf("delete missing instances: %w", err)
			}
		}
	}
	now := time.Now().UnixNano()
	for index, guids := range byIndex(b.crashed) {
		for batch := range slices.Chunk(guids, 1000) {
			query := "UPDATE actual_lrps SET state = 'CRASHED', crash_count = 1, crash_reason = 'bbs-load: crashed', " +
				"since = ?, routable = ?, net_info = NULL, modification_tag_index = modification_tag_index + 1 " +
				"WHERE presence = 'ORDINARY' AND instance_index = ? AND process_guid IN " + inList(len(batch))
			args := append([]any{now, false, index}, stringArgs(batch)...)
			if _, err := tx.ExecContext(ctx, dialect.Rebind(dialect.Name(s.driver), query), args...); err != nil {
				return fmt.Errorf("crash instances: %w", err)
			}
		}
	}
	for batch := range slices.Chunk(b.extraLRPs, 1000) {
		query := "UPDATE desired_lrps SET instances = instances - 1, modification_tag_index = modification_tag_index + 1 " +
			"WHERE process_guid IN " + inList(len(batch))
		if _, err := tx.ExecContext(ctx, dialect.Rebind(dialect.Name(s.driver), query), stringArgs(batch)...); err != nil {
			return fmt.Errorf("lower instances: %w", err)
		}
	}
	return tx.Commit()
}

func byIndex(keys []instanceKey) map[int][]string {
	out := map[int][]string{}
	for _, k := range keys {
		out[k.index] = append(out[k.index], k.guid)
	}
	return out
}

func inList(n int) string {
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
}

func stringArgs(values []string) []any {
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return args
}
