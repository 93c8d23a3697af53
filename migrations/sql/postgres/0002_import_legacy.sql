-- Import a classic BBS database (fixtures/legacy/README.md describes its shape).
--
-- Before 0001 ran, the runner moved the classic desired_lrps, actual_lrps and
-- domains tables aside as legacy_desired_lrps, legacy_actual_lrps and
-- legacy_domains. This migration's Go step (import_classic_bbs, in
-- migrations/import_legacy.go) runs first: it turns each classic run_info blob
-- into the LRP's first run_infos row, definition "legacy", active and healthy,
-- and copies every desired LRP, actual LRP and domain, stamping each actual
-- LRP with that definition. Then the statements below drop the classic tables.
--
-- On a database that never was classic there is nothing to import and these
-- statements drop nothing. Both halves are safe to run again.
DROP TABLE IF EXISTS legacy_actual_lrps;
DROP TABLE IF EXISTS legacy_desired_lrps;
DROP TABLE IF EXISTS legacy_domains;
