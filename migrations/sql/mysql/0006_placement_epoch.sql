-- Placement is convergence's alone: only its passes give a row a cell
-- (claims, starts and reports act on rows already placed there). Every
-- pass that places reads the epoch before its rows, and its writes that
-- place apply only while the epoch is unchanged, moving it on by one: a
-- pass planned from a view that another pass's placements made stale
-- places nothing, so two passes can never fill one slot twice. A single
-- row, locked by each transaction that places; nothing else writes it.
-- Every statement is safe to re-run.
CREATE TABLE IF NOT EXISTS placement_epoch (
  id    INTEGER NOT NULL PRIMARY KEY,
  epoch BIGINT  NOT NULL
) ENGINE=InnoDB;
INSERT IGNORE INTO placement_epoch (id, epoch) VALUES (1, 1);
