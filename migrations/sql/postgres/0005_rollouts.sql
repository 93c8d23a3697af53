-- Rolling updates. One rollout record per LRP that ever changed its active
-- definition: where the rolling update stands as the planner last wrote
-- it. Convergence reads only the records that are not settled (a rollout
-- under way, failed, or definitions waiting for cleanup), through the
-- (settled, process_guid) index, so a board at rest reads nothing more.
-- state is a models.RolloutStatus_State name; times are Unix nanoseconds.
-- The guid compares byte by byte, as every guid column does (see 0003).
--
-- The column
--   actual_lrps.stop_requested BOOLEAN NOT NULL DEFAULT FALSE,
-- set on a RETIRING row whose rep must drain and remove it, is added by
-- this migration's Go step (add_actual_lrps_stop_requested, in
-- migrations/stop_requested.go) only where it is missing, so the
-- migration is safe to run again on every dialect.
CREATE TABLE IF NOT EXISTS rollouts (
  process_guid         VARCHAR(128) COLLATE "C" NOT NULL PRIMARY KEY,
  state                VARCHAR(16)  NOT NULL,
  reason               TEXT         NOT NULL DEFAULT '',
  definition_id        VARCHAR(64)  NOT NULL DEFAULT '',
  failed_definition_id VARCHAR(64)  NOT NULL DEFAULT '',
  started_at           BIGINT       NOT NULL DEFAULT 0,
  progress_at          BIGINT       NOT NULL DEFAULT 0,
  finished_at          BIGINT       NOT NULL DEFAULT 0,
  updated_instances    INTEGER      NOT NULL DEFAULT 0,
  in_flight            INTEGER      NOT NULL DEFAULT 0,
  settled              BOOLEAN      NOT NULL DEFAULT FALSE,
  modification_index   BIGINT       NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS rollouts_unsettled ON rollouts (settled, process_guid);
