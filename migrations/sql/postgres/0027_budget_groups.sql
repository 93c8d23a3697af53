-- Budget groups (issue 31, item 1; docs/disruption-budget.md): one row per
-- group, keyed by its name, with the disruption budget the LRPs that name
-- it share (max_unavailable: a count "2" or a percent "10%" of their
-- instances together), who last set it, and when it was created and last
-- set (Unix nanoseconds). The planner reads the whole table every pass (a
-- handful of rows). Its Go step (add_desired_lrps_budget_group,
-- migrations/add_column.go) adds
--   desired_lrps.budget_group  the group the LRP names ('' for none, as
--                              for every LRP already there),
-- and the index desired_lrps_budget_group on it.
-- Every statement is safe to re-run (MySQL commits DDL implicitly).
CREATE TABLE IF NOT EXISTS budget_groups (
  name            VARCHAR(255) COLLATE "C" NOT NULL PRIMARY KEY,
  max_unavailable VARCHAR(16)  NOT NULL,
  requested_by    VARCHAR(256) NOT NULL DEFAULT '',
  created_at      BIGINT       NOT NULL,
  updated_at      BIGINT       NOT NULL
);
