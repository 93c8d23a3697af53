package migrations

import (
	"context"
	"fmt"
	"strings"
)

// listIndex is an index a list filter reads through in list order: the
// filter's column followed by the table's key, so that a page of the
// list (WHERE filter = ? AND key > cursor ORDER BY key LIMIT n) is a range
// of the index, not a sort of every matching row. It replaces the index
// on the filter column alone.
type listIndex struct {
	table, name, replaces string
	columns               []string
}

// listIndexes are migration 0012's indexes: desired LRPs by domain,
// instances by domain and by cell.
var listIndexes = []listIndex{
	{table: "desired_lrps", name: "desired_lrps_domain_key", replaces: "desired_lrps_domain",
		columns: []string{"domain", "process_guid"}},
	{table: "actual_lrps", name: "actual_lrps_domain_key", replaces: "actual_lrps_domain",
		columns: []string{"domain", "process_guid", "instance_index", "presence"}},
	{table: "actual_lrps", name: "actual_lrps_cell_key", replaces: "actual_lrps_cell_id",
		columns: []string{"cell_id", "process_guid", "instance_index", "presence"}},
}

// replaceListIndexes is migration 0012's Go half: each list index is
// created where it is missing, then the index it replaces dropped where it
// is present, so a run interrupted anywhere (MySQL commits each DDL)
// finishes when it runs again. SQLite and MySQL 8 cannot say "create
// unless it exists" for an index in SQL alone.
var replaceListIndexes = &goStep{
	Name:     "replace_list_indexes",
	Revision: 1,
	Describe: func(ctx context.Context, env stepEnv) (string, error) {
		var said []string
		for _, ix := range listIndexes {
			for _, change := range []struct {
				name string
				want bool
				ddl  string
			}{
				{ix.name, true, ix.create()},
				{ix.replaces, false, dropIndex(env.dialect, ix.table, ix.replaces)},
			} {
				exists, err := indexExists(ctx, env.q, env.dialect, ix.table, change.name)
				if err != nil {
					return "", err
				}
				if exists == change.want {
					said = append(said, "index "+change.name+": nothing to do")
				} else {
					said = append(said, change.ddl)
				}
			}
		}
		return strings.Join(said, "; "), nil
	},
	Run: func(ctx context.Context, env stepEnv) error {
		for _, ix := range listIndexes {
			exists, err := indexExists(ctx, env.q, env.dialect, ix.table, ix.name)
			if err != nil {
				return err
			}
			if !exists {
				if _, err := env.q.ExecContext(ctx, ix.create()); err != nil {
					return fmt.Errorf("create index %s: %w", ix.name, err)
				}
			}
			old, err := indexExists(ctx, env.q, env.dialect, ix.table, ix.replaces)
			if err != nil {
				return err
			}
			if old {
				if _, err := env.q.ExecContext(ctx, dropIndex(env.dialect, ix.table, ix.replaces)); err != nil {
					return fmt.Errorf("drop index %s: %w", ix.replaces, err)
				}
			}
		}
		return nil
	},
}

func (ix listIndex) create() string {
	return "CREATE INDEX " + ix.name + " ON " + ix.table + " (" + strings.Join(ix.columns, ", ") + ")"
}

func dropIndex(dialect, table, name string) string { return driverOf(dialect).dropIndex(table, name) }

func indexExists(ctx context.Context, q querier, dialect, table, name string) (bool, error) {
	query, args := driverOf(dialect).indexExists(table, name)
	var n int
	if err := q.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
		return false, fmt.Errorf("look up index %s: %w", name, err)
	}
	return n > 0, nil
}
