package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// lrpBudget tallies the disruption budget of LRP guid as stored
// (convergence.TallyRows): its instances, strategy and budget, and its
// rows with the presence of their cells at now. lock ("" or the dialect's
// FOR UPDATE) ends the read of the desired row, which serializes the
// evacuations of one LRP. ok is false when the LRP is not desired: nothing
// to keep serving, no budget. g is the LRP's budget group tallied the same
// way (groupBudget), nil when it names none or one that is not defined.
func (s *SQLDB) lrpBudget(ctx context.Context, q queryer, guid, lock string, now int64) (t convergence.DisruptionBudget, g *convergence.GroupBudget, ok bool, err error) {
	var instances int32
	var strategy sql.Null[[]byte]
	var budget, group string
	err = s.queryRow(ctx, q, `SELECT instances, update_strategy, disruption_budget, budget_group FROM desired_lrps WHERE process_guid = ?`+lock, guid).
		Scan(&instances, &strategy, &budget, &group)
	if errors.Is(err, sql.ErrNoRows) {
		return t, nil, false, nil
	}
	if err != nil {
		return t, nil, false, err
	}
	expires, err := s.cellExpiries(ctx, q)
	if err != nil {
		return t, nil, false, err
	}
	t, err = s.tallyStored(ctx, q, guid, instances, strategy, budget, expires, now)
	if err != nil || group == "" {
		return t, nil, true, err
	}
	g, err = s.groupBudget(ctx, q, group, lock, expires, now, guid, t)
	return t, g, true, err
}

// groupBudget tallies budget group name over its members as stored
// (convergence.TallyGroup), nil when the group is not defined. lock ends
// the read of the group's row: it serializes the evacuations of the
// group's LRPs, as the desired row's lock does those of one LRP (the
// desired row is always locked first). own is the member whose budget
// the caller tallied already, ownBudget that tally: its rows are not read
// again.
func (s *SQLDB) groupBudget(ctx context.Context, q queryer, name, lock string, expires map[string]int64, now int64, own string, ownBudget convergence.DisruptionBudget) (*convergence.GroupBudget, error) {
	g, err := scanBudgetGroup(s.queryRow(ctx, q, `SELECT `+budgetGroupColumns+` FROM budget_groups WHERE name = ?`+lock, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type member struct {
		guid      string
		instances int32
		strategy  sql.Null[[]byte]
		budget    string
	}
	var members []member
	err = s.eachRow(ctx, q, `SELECT process_guid, instances, update_strategy, disruption_budget FROM desired_lrps WHERE budget_group = ?`,
		[]any{name}, func(rows *sql.Rows) error {
			var m member
			if err := rows.Scan(&m.guid, &m.instances, &m.strategy, &m.budget); err != nil {
				return err
			}
			members = append(members, m)
			return nil
		})
	if err != nil {
		return nil, err
	}
	tallied := make([]convergence.GroupMember, len(members))
	for i, m := range members {
		if m.guid == own {
			tallied[i] = convergence.GroupMember{ProcessGuid: own, Budget: ownBudget}
			continue
		}
		t, err := s.tallyStored(ctx, q, m.guid, m.instances, m.strategy, m.budget, expires, now)
		if err != nil {
			return nil, err
		}
		tallied[i] = convergence.GroupMember{ProcessGuid: m.guid, Budget: t}
	}
	return convergence.TallyGroup(g, tallied), nil
}

// tallyStored tallies the budget of LRP guid from its stored columns and
// its rows, with the presence of their cells (expires) at now.
func (s *SQLDB) tallyStored(ctx context.Context, q queryer, guid string, instances int32, strategy sql.Null[[]byte], budget string, expires map[string]int64, now int64) (convergence.DisruptionBudget, error) {
	var t convergence.DisruptionBudget
	stored, err := decodeUpdateStrategy(strategy.V, strategy.Valid)
	if err != nil {
		return t, errInvalidRecord("desired_lrp %q: update_strategy: %v", guid, err)
	}
	rows, err := s.selectActualLRPs(ctx, q, "process_guid = ?", guid)
	if err != nil {
		return t, err
	}
	view := make([]convergence.BudgetRow, len(rows))
	for i, r := range rows {
		view[i] = convergence.BudgetRow{Index: r.Index, Presence: r.Presence, State: r.State, Routable: r.Routable,
			StopRequested: r.StopRequested, OnPresentCell: r.CellId != "" && expires[r.CellId] > now, Since: r.Since}
	}
	b := models.ResolveDisruptionBudget(instances, decodeDisruptionBudget(budget, ""), models.StoredRolloutStrategy(instances, stored))
	// Autoscaled stand-ins are not told apart here: an index one covers
	// counts as down, which only makes the drain wait longer.
	return convergence.TallyRows(instances, b, view, nil), nil
}

// cellExpiries maps every registered cell to its expires_at.
func (s *SQLDB) cellExpiries(ctx context.Context, q queryer) (map[string]int64, error) {
	rows, err := s.query(ctx, q, `SELECT cell_id, expires_at FROM cells`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	expires := map[string]int64{}
	for rows.Next() {
		var id string
		var at int64
		if err := rows.Scan(&id, &at); err != nil {
			return nil, err
		}
		expires[id] = at
	}
	return expires, rows.Err()
}

// decideEvacuation asks convergence.DecideEvacuation whether the instance
// of guid on draining cell cellID may be handed over now.
func (s *SQLDB) decideEvacuation(ctx context.Context, tx *sql.Tx, instance *models.ActualLRP, cellID string, now int64) (convergence.Evacuation, error) {
	guid := instance.ProcessGuid
	t, g, ok, err := s.lrpBudget(ctx, tx, guid, s.driver.lockForUpdate(), now)
	if err != nil || !ok {
		return convergence.Evacuation{Go: true}, err
	}
	var deadline int64
	err = s.queryRow(ctx, tx, `SELECT drain_deadline FROM cells WHERE cell_id = ?`, cellID).Scan(&deadline)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return convergence.Evacuation{}, err
	}
	serves := instance.State == models.ActualLRP_RUNNING && instance.Routable
	return convergence.DecideEvacuation(guid, serves, t, g, deadline, now), nil
}

// recordOverdue notes on cell cellID that an evacuation went ahead past
// its drain's deadline over a spent budget, the first time only, and
// returns its cell_changed event.
func (s *SQLDB) recordOverdue(ctx context.Context, tx *sql.Tx, cellID string, now int64) ([]models.Event, error) {
	before, err := s.lockCell(ctx, tx, cellID, now)
	if err != nil || before == nil || before.DrainOverdueAt != 0 {
		return nil, err
	}
	if _, err := s.exec(ctx, tx, `UPDATE cells SET drain_overdue_at = ? WHERE cell_id = ?`, now, cellID); err != nil {
		return nil, err
	}
	after := proto.Clone(before).(*models.Cell)
	after.DrainOverdueAt = now
	return []models.Event{models.CellChanged(before, after)}, nil
}

// DrainStatus reports how the cell's drain goes; see db.CellDB.
func (s *SQLDB) DrainStatus(ctx context.Context, cellID string) (*models.DrainStatus, error) {
	if cellID == "" {
		return nil, errInvalid("cell_id", "required")
	}
	if err := checkWidth("cell_id", cellID, maxCellID); err != nil {
		return nil, err
	}
	now := s.now().UnixNano()
	cells, err := s.cellsWithUsage(ctx, []string{cellID})
	if err != nil {
		return nil, asModelError("drain status", err)
	}
	if len(cells) == 0 {
		return nil, errNotFound("cell %q not found", cellID)
	}
	status := &models.DrainStatus{Cell: cells[0]}
	rows, err := s.selectActualLRPs(ctx, s.conn, "cell_id = ?", cellID)
	if err != nil {
		return nil, asModelError("drain status", err)
	}
	waiting := map[string]int32{}
	for _, r := range rows {
		switch {
		case r.Presence == models.ActualLRP_EVACUATING:
			status.Evacuating++
		case r.Presence == models.ActualLRP_ORDINARY && r.State == models.ActualLRP_RUNNING:
			status.Waiting++
			waiting[r.ProcessGuid]++
		}
	}
	if !status.Cell.Draining {
		return status, nil
	}
	guids := make([]string, 0, len(waiting))
	for guid := range waiting {
		guids = append(guids, guid)
	}
	slices.Sort(guids)
	for _, guid := range guids {
		t, g, ok, err := s.lrpBudget(ctx, s.conn, guid, "", now)
		if err != nil {
			return nil, asModelError("drain status", err)
		}
		if !ok {
			continue
		}
		if e := convergence.DecideEvacuation(guid, true, t, g, status.Cell.DrainDeadline, now); e.Blocked != nil {
			status.Blocked = append(status.Blocked, &models.DrainBlockedLRP{ProcessGuid: guid, Waiting: waiting[guid], BlockedBy: e.Blocked})
		}
	}
	return status, nil
}
