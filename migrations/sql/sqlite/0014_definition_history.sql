-- Rollback targets only definitions that ran (issue 26): each definition
-- keeps whether it ever ran as its LRP and whether validation refused it.
-- The columns
--   run_infos.became_healthy    (false until the definition is, or was,
--                                the LRP's healthy definition)
--   run_infos.failed_validation (false until a VALIDATE operation for it
--                                ended in ERROR before it became active)
-- are added by this migration's Go step (add_run_infos_history, in
-- migrations/add_column.go) only where they are missing.
--
-- What the rows already there can tell: the LRP's healthy definition
-- became healthy (a definition imported from a classic BBS is active and
-- healthy, so it counts); a definition that never did and whose VALIDATE
-- operation, if not yet pruned, ended in ERROR with the reason validation
-- gives ("validation of <id> failed: ...") failed validation. Older
-- history is not kept anywhere, so a definition healthy once but not now
-- stays false: a plain rollback then skips it (--to still reaches it).
-- Every statement is safe to re-run: it sets only what is still unset.
UPDATE run_infos SET became_healthy = 1
 WHERE became_healthy = 0
   AND EXISTS (SELECT 1 FROM desired_lrps d
                WHERE d.process_guid = run_infos.process_guid
                  AND d.healthy_definition_id = run_infos.definition_id);
UPDATE run_infos SET failed_validation = 1
 WHERE failed_validation = 0 AND became_healthy = 0
   AND EXISTS (SELECT 1 FROM operations o
                WHERE o.process_guid = run_infos.process_guid
                  AND o.definition_id = run_infos.definition_id
                  AND o.kind = 'VALIDATE' AND o.status = 'ERROR'
                  AND o.reason LIKE 'validation of % failed%');
