// Package convergence keeps the board's actual instances in line with its
// desired ones. It is the planner, a pure function, and the vocabulary the
// planner reads and writes; the runner that feeds it and applies its plans
// is package convergence/runner.
//
//	plan := convergence.Compute(snapshot, now, convergence.DefaultConfig())
//
// Compute reads a Snapshot (every DesiredLRP's schedule, every ActualLRP
// row, every cell, the fresh domains), decides what should change at time
// now, and returns a Plan. It does no I/O, keeps no state between calls,
// never modifies the snapshot, and returns the same plan for the same
// input whatever the order of the snapshot's slices. The runner loads
// snapshots, applies plans with db.ConvergenceDB.ApplyConvergence (the
// store emits the events), exports metrics, and owns the convergence
// lease.
//
// Words have the one meaning package models lists under "Words": an extra
// or undesired instance is deleted, never retired (retiring is the
// RETIRING start-before-stop of a rolling update or a move); a staged
// rollout holds, a stand-in covers; epoch alone is the placement epoch.
//
// # What lives where
//
//   - convergence (this package): the planner — Compute and what it
//     decides with (reconcile, placement, moves, rollouts, staged phases,
//     autoscaling, operations, validation, explanations) — the rollout dry
//     run (PlanRollout) with its in-memory apply, and the vocabulary:
//     Snapshot and its rows (snapshot.go), ConvergenceWrites with every
//     write type and ConvergenceResult (writes.go). It imports models,
//     protobuf's proto and the standard library; imports_test.go fails
//     should it link database/sql, net/http, Prometheus, db or the runner,
//     or take a context.
//   - convergence/runner: the I/O around the planner. Runner (a pass while
//     it owns the convergence lease: lease.go, schedule.go), Mirror (the
//     snapshot kept in memory from the event log), the pass metrics
//     (metrics.go) and RolloutPlanner, which reads the live state for a dry
//     run.
//   - db: ConvergenceDB and ConvergenceFeedDB, the storage seam the runner
//     reads and applies through, in this package's terms; db/sqldb
//     implements them.
//   - models: ActualLRPKey and Caller, shared by the planner, storage and
//     the lifecycle calls.
//
// Imports go one way: runner → db → convergence → models.
//
// # The plan
//
// Plan.Writes is a ConvergenceWrites: instance rows to delete, promote,
// mark suspect, retire, stop, create, restart, redefine, unassign, place
// or mark as unplaceable, autoscaled counts, rollout records, definitions
// to delete and operations to move on (the list below).
// Plan.Reasons holds one sentence per write, index for index, for logs
// and tests. Plan.Counts are the gauges of the pass (see Counts for
// exactly what each counts). Plan.NextWake is the earliest moment a crash
// backoff ends or a placement turns stale, so the runner can run a pass
// then instead of waiting for its period.
//
// Within each group, writes come in process guid order, then index order;
// deletions of extra instances of one LRP come highest index first; the
// Retire and Create writes of moves (see "Moves") come last in their
// groups.
//
// # Never acting on a stale view
//
// Every write names the row version it was computed from (key, state,
// modification index). ApplyConvergence applies a write only if the row is
// still at that version, and skips it otherwise; the next pass looks
// again. Creates apply only if their key is free, and a presence change
// only if the target key is free.
//
// Some rows get two writes in one plan: a Restart or an Unassign, then a
// Place or PlacementFailed. The second write names the version the first
// one leaves: state UNCLAIMED and modification index + 1. This relies on
// two promises of ApplyConvergence: it performs the groups in the order
// documented on ConvergenceWrites, and every write it applies bumps the
// row's modification index by exactly one. If the first write loses a race,
// the second finds a different version and is skipped too.
//
// What the planner expects each write to do, in the order ApplyConvergence
// performs the groups. A row write's effect on the row is one function of
// effects.go, which the in-memory apply (ApplyPlan, the rollout dry run)
// applies and the SQL store builds its events with; the differential spec
// of db/sqldb holds the SQL writes equal to them on every dialect.
//
//   - Autoscale stores an autoscaled LRP's count and autoscaler state
//     (Autoscaled), while the LRP is unchanged since the snapshot.
//   - Delete removes the row.
//   - Promote moves a SUSPECT or RETIRING row to ORDINARY, clearing
//     stop_requested (Promoted). Nothing else about the row changes.
//   - MarkSuspect moves an ORDINARY row to SUSPECT (MarkedSuspect).
//     Nothing else about the row changes.
//   - Retire makes a RUNNING ORDINARY row the index's RETIRING row, told
//     to stop at once or not (Retired).
//   - RequestStop tells a RETIRING row's rep to stop it (StopRequestedAt).
//   - Create inserts an UNCLAIMED ORDINARY row on the given definition,
//     with the cell or the placement error placement chose, since = now
//     (Created).
//   - Restart makes a CRASHED row UNCLAIMED without a cell or instance,
//     keeps its crash count, since = now (Unassigned).
//   - Redefine puts an ORDINARY row that serves nothing on the active
//     definition, UNCLAIMED, crash count 0 (Redefined).
//   - Unassign makes an UNCLAIMED or CLAIMED row UNCLAIMED without a cell
//     or instance, since = now (Unassigned).
//   - Place sets the cell of an UNCLAIMED row, clears its placement error
//     and sets since = now, which starts the stale_unclaimed clock
//     (Placed).
//   - PlacementFailed clears the cell of an UNCLAIMED row and records the
//     reason as its placement error (PlacementFailedFor).
//   - Rollouts store an LRP's rollout record (StoredRollout) and may move
//     its healthy or active definition (RolloutDefinitions), while the
//     record and the active definition are as the snapshot read them.
//   - DeleteDefinitions delete stored definitions cleanup no longer keeps,
//     unless at apply time one is active, healthy or referenced by a row.
//   - Operations change operations that have not ended (status, history,
//     lease) or start a PENDING one (OperationWrite.Start), compare-and-set
//     on the operation's modification index. The in-memory apply does not
//     play them: a dry run's plan carries none of its own LRP's.
//
// A spec (doc_test.go) fails when a group of ConvergenceWrites is missing
// from this list.
//
// # Partial snapshots
//
// A targeted pass reads some LRPs only (Snapshot.Partial): their rows,
// their unsettled rollout records, definitions and open operations, every
// cell with what the unread rows use on it (CellRow.UnreadUse), and the
// fresh domains. Compute decides those LRPs as a full pass would, except
// what needs every row of a cell: it moves nothing off an overloaded cell
// ("Moves"; an LRP's uneven zones are its own rows, read in full, and are
// evened out). The runner's Mirror serves the lease
// owner's passes from memory and reads only the LRPs that changed.
//
// # Decisions
//
// Rows are taken LRP by LRP. An index i of a DesiredLRP with n instances
// is wanted when 0 <= i < n. ORDINARY and SUSPECT rows take part as below,
// EVACUATING rows as in "Evacuation", RETIRING rows as in "Rolling
// updates": they are never counted as ORDINARY, and they use capacity on
// their cells, but they are leaving, so they do not count towards their
// LRP's spread.
//
// For each wanted index, with its ORDINARY row O and SUSPECT row S (either
// may be absent):
//
//   - S present and O RUNNING: delete S (its replacement runs), whether or
//     not S's cell has come back.
//   - S neither RUNNING nor CLAIMED (it crashed after its cell came back):
//     delete S; it serves nothing.
//   - S's cell is present again and O is not RUNNING: delete O, if any,
//     and promote S back to ORDINARY. Nothing else happens at this index.
//   - S's cell is still gone and O is not RUNNING: keep S (it is still
//     counted and routable) and go on with O below.
//   - No O: create it on the active definition, placed in the same pass
//     (missing instance, or the replacement of a suspect).
//   - O RUNNING on a cell that is not present (expired, or never
//     registered): mark O SUSPECT and create a replacement, placed on a
//     present cell in the same pass.
//   - O CLAIMED on a cell that is not present: unassign it and place it
//     again. It serves nothing yet, so there is nothing to keep routable.
//   - O UNCLAIMED without a cell: place it.
//   - O UNCLAIMED on a cell that is not present: unassign and place again.
//   - O UNCLAIMED on a draining cell: unassign and place again, elsewhere.
//   - O UNCLAIMED on a present cell for stale_unclaimed or longer (since
//     the placement): unassign and place again, on another cell if any
//     fits, otherwise back on the same one.
//   - O CRASHED: the crash policy decides. Due: restart it and place it in
//     the same pass. Not due: wait (NextWake). Given up: leave it CRASHED
//     (Counts.GaveUp). The cell a crashed row names plays no part.
//   - Otherwise (O CLAIMED or RUNNING on a present cell, or UNCLAIMED and
//     placed recently): nothing.
//
// Rows that are not wanted (index >= n or negative, or the DesiredLRP is
// gone) are ORDINARY rows counted as Counts.Extra. When the row's own
// domain is fresh they are deleted, ORDINARY and SUSPECT alike, highest
// index first. When it is not, the board may be missing desired state
// (Diego's rule), so they are left exactly as they are: no deletion, no
// restart, no placement, no suspicion. Missing instances, by contrast, are
// created whatever the domain.
//
// # Evacuation
//
// A draining cell (POST /v1/cells/drain) stays present — what runs there is
// not suspect — but placement puts nothing on it. Its rep evacuates each
// instance: the board keeps the running instance as an EVACUATING row
// (same cell and instance, still routable) and turns the index's ORDINARY
// row into an UNCLAIMED one without a cell, which this planner places
// elsewhere like any other; the rep stops the evacuating instance once a
// bulk report says the replacement runs, and removes its row.
//
// An EVACUATING row E never stands for its index: the index's ORDINARY
// row is decided as if E were not there (no ORDINARY row: one is created,
// "missing"), and E is not counted in any gauge but uses capacity on its
// cell. E does not count towards the spread, nor do other rows on a
// draining cell. E is deleted when
//
//   - its cell is not present (expired or unregistered): nobody is left
//     to stop or report it; unlike a SUSPECT row it is not kept;
//   - its index is not wanted (the DesiredLRP is gone, or index >= n),
//     in a fresh domain, as extra ORDINARY rows are (not counted as extra);
//   - the row that stands as the index's ORDINARY instance after this pass
//     has been RUNNING (by its since) for Config.EvacuationGrace or longer
//     (the board uses twice the cells' presence TTL): its rep was told to
//     stop it and should have removed it. Until then NextWake includes the
//     moment the grace ends.
//
// Otherwise E is left as it is.
//
// # Crash policy
//
// CrashPolicy.RestartDelay maps a crash count to a wait, measured from the
// row's Since (the time of the crash). With DefaultCrashPolicy crashes 1
// to 3 restart at once, crash 4 waits 30 s, each further crash doubles the
// wait up to 16 min (crash 9 on), and at 200 crashes the board gives up. A
// restart keeps the crash count. The planner never resets it: resetting
// after an instance has run for a while (Diego does after 5 min) belongs to
// the crash lifecycle write, which knows how long the instance ran.
//
// # Placement
//
// Every instance to place in a pass (new rows, restarted and unassigned
// rows, rows without a cell) is placed in one batch after all LRPs have
// been reconciled, so every decision sees what every row already uses and
// what the pass placed before it.
//
// A cell fits an instance when it is present and not draining, its
// placement tags include all of the LRP's, and it has free memory, disk
// and an instance slot for the instance: the resources of the row's own
// definition, or of the active definition for a new row. Free capacity is
// the cell's capacity minus the resources of every row that names it (any
// state, any presence, any LRP), minus what this pass has placed on it. A
// pass for some LRPs (a targeted pass: a desire, an update, the rollout
// tick) reads only their rows, and the snapshot's Cells[i].UnreadUse
// carries what every other row uses, so that it decides as a full pass
// would. Capacity freed by this pass (deletions, restarts,
// unassignments) is not reused before the next pass, so a write that loses
// its race can never overcommit a cell; and a plan places only while no
// other plan has placed since its snapshot was read (the placement epoch,
// ConvergenceWrites.PlacementEpoch), so two passes cannot both take the
// last slot of a cell.
//
// Among the cells that fit, an instance goes to the one with the fewest
// instances of its LRP in the cell's zone, then the fewest on the cell,
// then the most free memory, then the lowest cell id. An LRP's instances
// counted here are its rows on present cells that the pass keeps (not
// RETIRING rows, which are leaving, nor rows on draining cells), plus
// those the pass places.
//
// An instance also avoids the cells where its LRP's definition crashed
// within Config.CrashMemory's window (Snapshot.Crashes; crash_memory.go,
// with a worked example), as it avoids the cell that did not claim it in
// time: it goes there only when no other cell fits, and is never left
// unplaced for it. A move (below) never goes to such a cell: the
// instance stays where it runs. Cells whose crashes
// spike are listed in Plan.CrashSpikes and otherwise placed on as usual.
// Scenario lines:
//
//	config crash_window=10m spike_min=10 spike_factor=3
//	crash GUID definition=v1 cell=cell-a at=-5m
//
// and the plan shows a crash-spike line per spiking cell.
//
// # Moves: overloaded cells and uneven zones
//
// moves.go moves a running instance to another cell start before stop: it
// becomes its index's RETIRING row, still serving, and a new ORDINARY
// instance of the same definition is created on the cell placement chose;
// the rolling update rules then stop the old one once the new one is
// ready. A move happens for one of two reasons, only for a settled LRP (no
// RETIRING row, no row on an older definition), at most
// max(max_surge, 1) of its instances per pass, and only when placement
// finds a cell, after every other instance of the pass is placed:
//
//   - Overloaded cell (full passes only: a partial snapshot does not hold
//     every row of a cell). A cell whose rows use more memory, disk or
//     slots than its capacity — it came back smaller, or an older board
//     overcommitted it — is relieved: its UNCLAIMED rows are placed again
//     elsewhere, then its running instances move, idle before occupied,
//     highest index first, until what stays fits. Rows the pass deletes or
//     unassigns count as gone.
//   - Uneven zones. When every wanted index runs, and two zones that can
//     take the LRP (a present cell, not draining, with its tags) hold
//     numbers of its instances two or more apart, an instance moves from
//     the fullest zone (idle first, from the cell with most of them, then
//     the highest index) to the zone placement picks, if that zone then
//     holds fewer than the one left.
//
// Worked example of uneven zones, 6 instances after a drain of cell-a (z1)
// and its return, all on cell-b (z2), max_surge 1:
//
//  1. z1 0, z2 6: spread 6 ≥ 2, so web/5 moves to cell-a: z1 1, z2 5 once
//     its replacement is ready and it is told to stop.
//  2. The next settled pass: z1 1, z2 5 → web/4 moves: 2 and 4.
//  3. Then 3 and 3: spread 0, nothing moves. With max_surge 50% (3) the
//     first pass starts all three moves at once.
//  4. Were cell-a full, placement would find no cell in z1 and nothing
//     would move: one apart is a promise only where capacity allows.
//
// Counting a RETIRING predecessor as leaving is what keeps rollouts from
// unbalancing zones in the first place: with 3 + 3 instances and the
// three victims of a surge of 3 all in z1, their replacements are placed
// as if z1 held none of them, so all three go back to z1. Counted, they
// would all go to z2, and a few rollouts later every instance would sit
// there.
//
// Instances are placed in rounds: the first instance to place of every
// LRP (in process guid order), then the second of every LRP, and so on.
// When capacity runs short, every LRP gets its first instances before any
// gets its last.
//
// When nothing fits, the instance is not dropped: a new row is created
// with the reason as its placement error, and an existing row gets a
// PlacementFailed (unless it already carries that exact reason). It is
// tried again on every pass. The reason names what no present cell offers,
// in the order tags, memory, disk, instance slot, for example "no present
// cell has tags [gpu]" or "no cell with 2048 MB free memory and tags
// [gpu]".
//
// # Scenario files
//
// testdata/*.txt describe a state and the plan for it; the test suite
// parses each state, runs Compute, renders the plan and compares. Run
//
//	go test ./convergence -update
//
// to rewrite the expected parts after a deliberate change, then review the
// diff. A file is the state, a line "----", and the expected plan.
//
// The state is one item per line; "#" starts a comment, blank lines are
// ignored, values are key=value (double-quote values with spaces, in Go
// syntax). Times are durations relative to now, which defaults to
// 2025-01-01T00:00:00Z.
//
//	now 2025-06-01T12:00:00Z                  optional
//	config stale_unclaimed=60s immediate_restarts=3 base_delay=30s max_delay=16m give_up_at=200 evacuation_grace=60s
//	fresh apps other                          the fresh domains
//	cell ID zone= memory=8192 disk=16384 instances=100 tags=a,b expires=+30s draining=false
//	desired GUID domain=apps instances=1 definition=v1 memory=256 disk=512 tags=a,b
//	actual GUID/INDEX state=RUNNING presence=ORDINARY cell=ID domain= definition= memory= disk= since=-10s crashes=0 mod=1 error="..."
//
// Numbers shown for cell and desired are the defaults; an actual row
// defaults to presence ORDINARY, no cell, since=0s, crashes=0, mod=1 and no
// error. config defaults to DefaultConfig.
// An actual row's state is required; its domain, definition, memory and
// disk default to its DesiredLRP's when that is declared above it.
//
// The expected plan lists the writes in the order ApplyConvergence
// performs them, each with its reason after "#"; keys are GUID/INDEX,
// with ":suspect" (or another presence) appended unless ORDINARY:
//
//	delete web/4 RUNNING mod=1  # extra: index 4 is not below instances 2
//	promote web/1:suspect RUNNING mod=3  # cell cell-b is present again
//	suspect web/1 RUNNING mod=5  # presence of cell cell-b expired 5s ago
//	create web/1 domain=apps definition=v1 cell=cell-c  # replaces suspect on cell cell-b
//	restart web/2 CRASHED mod=4  # crash 2, restarts at once
//	unassign web/3 UNCLAIMED mod=1  # cell cell-a did not claim it within 1m0s
//	place web/3 UNCLAIMED mod=2 cell=cell-b  # placed again: the cell did not claim it in time
//	place-failed ml/0 UNCLAIMED mod=1 error="no present cell has tags [gpu]"  # unclaimed without a cell
//	counts desired=3 running=1 claimed=0 unclaimed=0 crashed=0 missing=0 extra=0 suspect=0 gave_up=0 unplaced=0 present_cells=2 suspect_cells=0 rollouts_under_way=0 rollouts_failed=0 rollouts_held=0
//	next-wake +30s
//
// A create shows cell= when placed and error= when not; next-wake is
// relative to now, or "none".
//
// # Rolling updates
//
// An index is outdated when its ORDINARY row runs a definition other than
// the LRP's active one. An LRP takes part in the rollout rules when it has
// an outdated row, a RETIRING row, or a rollout record that is not settled
// (Snapshot.Rollouts); every other LRP costs one scan of its rows.
// models.ResolveRolloutStrategy turns its UpdateStrategy into S (max_surge) and U
// (max_unavailable) counts, and PlanRolloutStep (rollout_step.go) picks the
// replacements of the pass; rollout.go turns them into writes:
//
//   - An outdated instance that serves (RUNNING, routable, on a present
//     cell) is replaced start-before-stop: Retire makes its row the
//     index's RETIRING row — same instance, still routable — and Create
//     adds the new ORDINARY row on the active definition, placed in the
//     same pass. With Stop (U allows one index fewer) its rep drains it at
//     once; otherwise it serves until its successor is ready.
//   - An outdated instance that serves nothing (UNCLAIMED, CLAIMED,
//     CRASHED, unroutable) costs no availability: Redefine moves its row
//     onto the active definition in place and a chained Place puts it on a
//     cell. A superseded replacement (RETIRING row beside an ORDINARY one
//     on an intermediate definition that does not run yet) is moved the
//     same way.
//   - When an ORDINARY successor has been RUNNING and routable for
//     min_ready, RequestStop tells its RETIRING predecessor to go; the rep
//     drains it (unroutable, grace, SIGTERM, SIGKILL) and removes the row.
//   - A RETIRING row that runs the active definition again — a rollback,
//     abort or auto-revert re-activated the definition it was being
//     replaced from — and still serves, not told to stop, is promoted back
//     to ORDINARY, and the index's ORDINARY row on the abandoned
//     definition is deleted (its rep stops that instance): going back
//     restarts only what runs the abandoned definition.
//   - A RETIRING row is deleted when its LRP is gone (fresh domain) or its
//     index no longer wanted: removal and scale-down stop at once; when its
//     cell is not present; when it no longer runs; and when it was told to
//     stop EvacuationGrace ago and is still there.
//   - Outdated instances not picked this pass follow the usual rules: a
//     crash restarts on the instance's own definition.
//   - A fast rollout (RolloutRow.Fast: a rollback or abort asked fast,
//     and every auto-revert) is rolled with
//     models.RolloutStrategy.FastRollout: min_ready 0, and a surge of
//     every remaining index at once as far as the room the cells have for
//     the active definition's instances goes (cellTable.room, counted
//     from the snapshot's rows), start before stop, within U.
//
// The arithmetic, worked through for 10 serving instances of v1, active v2,
// max_surge "25%", max_unavailable "0":
//
//  1. S = ceil(10 × 25%) = 3, U = 0: at most 13 instances, never fewer
//     than 10 serving indices.
//  2. Pass 1: victims in order (not serving, idle, occupied; then the
//     oldest definition; then index): indices 0, 1, 2 are retired, kept
//     serving, and three v2 instances are created: 13 instances, 10
//     serving, 3 in flight.
//  3. The v2 instances start; the first pass after each has run min_ready
//     stops its predecessor (RequestStop) and, its slot free, starts the
//     next victim in the same pass.
//  4. Four rounds later every index runs v2 and every RETIRING row has
//     been told to stop: the rollout is COMPLETE.
//
// With S = 0, U = 1 on the same LRP, one index at a time is retired with
// Stop: 9 serving at the least, never more than 10 instances.
//
// # Disruption budget
//
// Every DesiredLRP has a disruption budget: how many of its wanted indices
// may be down at once for every voluntary disruption together
// (DesiredLRP.disruption_budget, default the strategy's max_unavailable;
// models.ResolveDisruptionBudget). TallyBudget (budget.go, with a worked
// example) counts the indices down (crashes, lost cells, stops under way:
// involuntary losses count, and nothing blocks them) and leaving (served
// only by an EVACUATING instance or a RETIRING one told to stop), and the
// planner asks it before each voluntary disruption: a rollout's
// stop-at-once replacement (rollbacks and reverts alike) takes one of its
// Stops; a move starts only while it has Handovers left; the store asks it
// before each evacuation of a draining cell. Scenario lines set it with
// budget= on a desired line.
//
// An LRP may also name a budget group (disruption_budget.group;
// Snapshot.BudgetGroups): a budget its members share. TallyGroup sums the
// members' spent before the LRPs are decided; each LRP's stops and
// hand-overs are then the fewer of its own and its group's
// (GroupStops, GroupHandovers), and every stop a rollout takes is drawn
// from the group at once, LRP after LRP in process guid order. Scenario
// lines define a group with "budgetgroup NAME max_unavailable=N" and put
// an LRP in it with budget_group= on its desired line.
//
// # Rollout records
//
// Each LRP that changed definition has a record (RolloutRow); the
// update, rollback or abort that changed the active definition wrote it
// as PROGRESSING. Compute writes it (Writes.Rollouts, compare-and-set on
// its modification index and the active definition) only when something
// it holds changes:
//
//   - updated instances (indices on the active definition, RUNNING and
//     routable for min_ready) rise: progress_at = now;
//   - every index updated and no RETIRING row left untold: COMPLETE, and
//     the active definition becomes the healthy one;
//   - progress_deadline since progress_at without progress: FAILED, and no
//     new replacement starts (ready successors still stop their
//     predecessors); with auto_revert and a healthy definition other than
//     the active one, the healthy one is re-activated instead and the
//     record turns REVERTED, which rolls back the same way and ends
//     REVERTED with finished_at set (or FAILED, if it stalls too). The
//     pass that reverts starts and stops nothing of the LRP (no
//     replacement, no crash restart, no placement): nothing of the failed
//     definition starts, nothing of the healthy one stops; the next pass
//     works from the healthy definition. A failure's reason quotes the
//     last crash reasons of the failed definition's instances (up to
//     three);
//   - outdated rows without a record of the active definition: a new
//     PROGRESSING record; a record of another definition while every
//     index already runs the active one ready: COMPLETE on the active
//     one (it would never settle otherwise).
//
// A FAILED record is written only when its counts change; it is settled
// never, so the LRP is read every pass until a rollback or an update
// starts a new rollout.
//
// NextWake covers the moment a successor becomes ready and the deadline
// (counted from the progress_at this pass writes, so a pass that records
// progress or reverts wakes at the new deadline);
// the runner also gives LRPs with a rollout under way a targeted pass every
// RolloutInterval (default 1 s).
//
// Definition cleanup, for LRPs with a record: every definition is kept
// that is active, healthy, referenced by any row of the LRP (any presence,
// any state), or among the newest history_limit; the rest are deleted
// (Writes.DeleteDefinitions, re-checked by the store). The record is
// settled — no longer read — once the rollout is over and no definition
// beyond those waits for a row to let go. For a removed LRP every
// definition no row references is deleted, then the record.
//
// Scenario files describe rollouts with these state lines (times relative
// to now):
//
//	desired GUID definition=v2 healthy=v1 surge=25% unavailable=0 min_ready=10s deadline=10m auto_revert=true history=10
//	actual GUID/INDEX state=RUNNING routable=true occupied=true stop=true presence=RETIRING
//	rollout GUID state=PROGRESSING definition=v2 failed= started=-1m progress=-1m finished= updated=0 inflight=0 mod=1 reason="..."
//	definition GUID/ID created=-1h          each LRP's definitions newest first
//
// routable defaults to true for a RUNNING row; healthy to the active
// definition. The plan shows retire (stop=), request-stop, redefine,
// rollout (the record written) and delete-definition lines.
//
// # The rollout governor
//
// Config.MaxRolloutsInFlight (the board's max_rollouts_in_flight; 0 means
// no limit) bounds how many rollouts move instances at once across the
// board; GovernRollouts (governor.go) decides each pass, over every
// rollout record of the board (Snapshot.BoardRollouts in a targeted
// pass), which are admitted and where the others wait:
//
//   - a record under way is admitted once (admitted_at, stored) and then
//     holds its slot while under way or HELD, whatever the limit becomes;
//   - reverts and fast rollbacks are admitted at once and count;
//   - the others are admitted first in, first out (by started_at) while
//     fewer than the limit are in flight;
//   - a queued rollout starts nothing (as a paused phase), its progress
//     deadline does not run and is counted from its admission, and its
//     record holds queue_position and queue_reason ("queued: position 1
//     of 1 (max_rollouts_in_flight 2)"); its operation's history notes the
//     queueing and the admission.
//
// A record the planner writes for outdated rows without one is admitted
// as it is written (its instances started rolling in that pass). In the
// scenario files a rollout line is admitted when it started unless it
// says admitted=-1m or queued=true, and may carry queue_position= and
// queue_reason=; config max_rollouts_in_flight=N sets the limit.
//
// # Why a rollout is stuck
//
// Every record a pass leaves under way gets a blocked_by from
// DiagnoseRollout (blocked.go, with its order of causes and a worked
// example): queued, frozen, awaiting promote, baking, then the first cause
// of a waiting index (placement refused by tags, no capacity zone by zone,
// cell unreachable, asset download failing, health check failing), then
// waiting for min-ready; nil when none holds. The placement causes are
// this pass's own placement failures, so the record's write waits until
// placement is done (finishBlocked), keeping its place among the rollout
// writes; a record whose blocked_by, since included, and everything else
// are unchanged is not written. since is the stored one while the reason
// stays. Counts.RolloutsBlocked counts them by reason, and
// RolloutsBlockedTooLong those blocked for Config.BlockedAlertAfter or
// longer. Scenario lines: a rollout may carry blocked=REASON
// blocked_since=-5m blocked_detail="..." blocked_estimate=+1m; config
// blocked_alert_after=10m; the plan shows the same on rollout lines and a
// "blocked rollouts=REASON:N too_long=N" line after the counts. A
// validation under way is judged the same way from its one instance
// (DiagnoseValidation, once placement is done: finishValidations), its
// blocked_by kept with its operation: operation lines carry blocked=...
// as rollout lines do, an operation write shows the one it sets
// (blocked=none to clear it), and "blocked operations=REASON:N" counts
// the blocked operations, rollouts' and validations'.
//
// # Staged phases and validation
//
// A record with a stage limits the rollout to the indices its share
// allows, in a fixed cohort order; the others keep the healthy definition;
// a crash of the new definition pauses the phase; a phase at its target
// below 100% HOLDs (rollout_stage.go, with worked examples; the arithmetic
// is models/rollout_stage.go). Scenario lines add to a rollout:
//
//	rollout GUID ... stage=PRIOR-TARGET rate=10%/5s phase=-20s watching=-20s paused=-5s pause_reason="..." paused_for=1m seed=S
//
// An IN_PROGRESS VALIDATE operation (an update with validate) whose
// definition is not active gets one extra instance at
// models.ValidationIndex; RUNNING, it validates the definition and the
// operation is started again (which applies the update); crashed three
// times, the operation ends in ERROR (validation.go).
//
// # Autoscaling
//
// An LRP with autoscaling enabled gets its count decided first in its
// pass, from the occupancy of its indices, and is reconciled at that count
// in the same plan; a scale-down keeps occupied instances above the count
// as stand-ins for lower indices (autoscale_plan.go, with worked
// examples; the arithmetic is autoscale.go). Scenario lines:
//
//	config scale_down_stabilization=2m
//	desired GUID autoscale=MIN-MAX@READY_TARGET window=2m recommended=-5m:8,-1m:2 decided=1 mod=1
//
// MAX -1 means no limit; recommended are the autoscaler's kept
// recommendations (times relative to now, oldest first); decided the
// occupancy its last decision saw (a decision is written again when the
// count, the count wanted or the occupancy changes); mod is the
// DesiredLRP's modification index. The plan shows autoscale lines (the
// count and recommendations written) first, with the decision's arithmetic
// as their reason.
package convergence
