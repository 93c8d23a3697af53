// Package models is the board's vocabulary: the API's messages (generated
// from the .proto sources beside this file), their validation, and the
// rules about them that every side shares (lifecycle transitions, bulk
// reports, rollout strategies, staged shares, autoscaling arithmetic).
//
// # Words
//
// Each word below has one meaning in code, comments, messages, API docs and
// the README. API, wire, CLI, metric and column names are kept as published
// even where they use a word loosely; the entry says so.
//
//   - retire: make a running instance (on an outdated definition, or being
//     moved) the RETIRING row of its index, kept serving while its
//     replacement starts (convergence's Retire write, a Retirement). Never
//     said of extra or undesired instances: those are deleted.
//   - delete (remove): a row goes away (convergence's Delete write): an
//     extra instance (index at or above instances, or negative), an
//     instance of a removed LRP, a suspect whose replacement runs. A
//     removed LRP is a DesiredLRP deleted through the API.
//   - hold: a staged rollout at its phase's target below 100% holds (state
//     HOLDING) until a promote; a rollout its failure policy stopped
//     (on_failure or on_marginal "hold") is held (state HELD) until a
//     resume, a rollback or an abort. Nothing else holds in this sense: a lease
//     has an owner, an autoscaling stand-in covers an index, the
//     scale-down window keeps a count. ("A field holds a value" is plain
//     English, not this word.)
//   - owner: the board named in a lease's row (leases.owner); it owns the
//     lease until the TTL runs out unless it renews it. The lease owner is
//     the board that converges. The metric corkboard_convergence_lease_held
//     keeps its published name.
//   - cover: an occupied instance at an index at or above the count stands
//     in for a lower index and covers it: that index's instance stops
//     instead and nothing is created for it.
//   - epoch: the placement epoch (table placement_epoch,
//     Snapshot.PlacementEpoch), moved on by every transaction that gives
//     rows a cell. A modification tag's random epoch is always the tag
//     epoch (ModificationTag.Epoch).
//   - plan: what one convergence pass decides (convergence.Plan: writes,
//     reasons, counts). The rollout plan is the dry run of an update
//     (POST /v1/rollouts/plan, cork rollout plan, RolloutPlan), a sequence
//     of simulated passes. What `bbs-migrate plan` prints is a migration
//     preview (migrations.Preview).
//   - phase: one period of a staged rollout, from an update with staged or
//     a promote: the share on the new definition grows from prior to target
//     percent, then the rollout holds. The wire field phase_started_at is
//     its start.
//   - verdict: one interval's judgement of a rollout by its analysis
//     (AnalysisVerdict): PASS, MARGINAL or FAIL, the worst of its checks'
//     results. bake: the time after every index runs the new definition
//     during which the analysis goes on before the rollout completes.
//   - edit: a change of the limits of a rollout under way (max_surge,
//     max_unavailable, min_ready, progress_deadline, a staged phase's
//     target and rate) by POST /v1/rollouts/edit, cork rollout edit, an
//     operation of kind EDIT (DecideRolloutEdit). A definition is never
//     edited: a changed definition is a new one, stored by an update.
//   - stage: where a staged phase stands (RolloutStage, RolloutStatus's
//     field stage, cork's STAGE column): shares, rate, seed, pause.
//   - bundle: one row of the event outbox or the event log holding several
//     consecutive events of one transaction about one LRP (event_count of
//     them, db/sqldb/bundle.go). Events keep a position each; writes that
//     share a transaction (coalesced) form a group, never a bundle.
package models
