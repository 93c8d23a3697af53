-- Freeze windows (issue 31, item 4; docs/rollouts.md): one row per window,
-- keyed by its name, spec the protobuf of its models.FreezeWindow (the
-- schedule or the from/until range, as the add call validated it),
-- created_at Unix nanoseconds. The planner reads the whole table every
-- pass (a handful of rows). Its Go step (add_rollouts_freeze_exemption,
-- migrations/add_column.go) adds
--   rollouts.freeze_exemption  why a freeze does not hold the rollout:
--                              "revert" (a rollback or an abort),
--                              "override" (an update with override_freeze),
--                              empty for the records already there.
-- Every statement is safe to re-run (MySQL commits DDL implicitly).
CREATE TABLE IF NOT EXISTS freeze_windows (
  name       VARCHAR(255) NOT NULL PRIMARY KEY,
  spec       MEDIUMBLOB   NOT NULL,
  created_at BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
