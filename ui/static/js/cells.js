// The cells page: each cell's capacity in use, whether it drains (and how
// the drain goes: what is left, its deadline, and each LRP whose disruption
// budget holds it), whether its presence is current (present) or expired
// (suspect).
import { h, replace, badge, coalesce, fmtTime } from './dom.js';
import { confirmAction } from './dialog.js';
import * as api from './api.js';

export function cellsPage() {
  const list = h('div', { class: 'cells', dataset: { testid: 'cells' } });
  const status = h('p', { class: 'muted' }, 'Loading…');
  const el = h('section', { class: 'page', dataset: { testid: 'cells-page' } }, h('h1', null, 'Cells'), status, list);
  const schedule = coalesce(250);
  let cells = [];
  // drains: the drain status of each draining cell, by cell id.
  let drains = {};

  function bar(label, capacity, free) {
    const total = capacity || 0;
    const used = Math.max(0, total - (free || 0));
    // Share of the bar in use: 48 of 64 MB used is 75%.
    const percent = total > 0 ? Math.round((used * 100) / total) : 0;
    const fill = h('div', { class: 'fill' + (percent >= 90 ? ' high' : '') });
    fill.style.width = percent + '%';
    return h('div', { class: 'capacity' },
      h('span', { class: 'label' }, label),
      h('div', { class: 'bar', attrs: { role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': total, 'aria-valuenow': used, 'aria-label': label } }, fill),
      h('span', { class: 'figure' }, `${used} / ${total}`));
  }

  function render() {
    replace(status, `${cells.length} cell${cells.length === 1 ? '' : 's'}`);
    replace(list, cells.map((c) => {
      const cap = c.capacity || {};
      const free = c.free || {};
      const drain = h('button', {
        type: 'button', class: 'danger', disabled: !!c.draining, dataset: { action: 'drain' },
        on: { click: () => confirmAction({
          title: `Drain ${c.cell_id}?`,
          body: h('p', null, 'Its instances are evacuated to other cells (start-before-stop), and nothing new is placed on it until its rep registers afresh.'),
          confirmLabel: 'Drain',
          act: () => api.call('/v1/cells/drain', { cell_id: c.cell_id }).then(() => later()),
        }) },
      }, 'Drain…');
      // A quarantined cell (cork cell quarantine, or the board on a crash
      // spike) takes nothing new until an operator clears it.
      const quarantined = c.quarantined_at && c.quarantined_at !== '0';
      const clear = quarantined ? h('button', {
        type: 'button', dataset: { action: 'clear-quarantine' },
        on: { click: () => confirmAction({
          title: `Clear ${c.cell_id}'s quarantine?`,
          body: h('p', null, 'Placement may put new instances on it again. The board records who cleared it and when.'),
          confirmLabel: 'Clear quarantine',
          act: () => api.call('/v1/cells/clear', { cell_id: c.cell_id }).then(() => later()),
        }) },
      }, 'Clear quarantine…') : null;
      return h('article', { class: 'card cell', dataset: { cell: c.cell_id } },
        h('header', null,
          h('h2', null, c.cell_id), ' ',
          h('span', { class: 'muted' }, 'zone ', c.zone || '—'), ' ',
          c.present ? badge('present', 'running') : badge('suspect', 'crashed'), ' ',
          c.draining ? badge('draining', 'retiring') : null,
          quarantined ? h('span', { class: 'badge crashed', title: c.quarantine_reason || '', dataset: { testid: 'cell-quarantined' } }, 'quarantined') : null,
          h('span', { class: 'spacer' }), clear, ' ', drain),
        quarantined ? h('p', { class: 'small', dataset: { testid: 'cell-quarantine-reason' } },
          'Quarantined ', fmtTime(c.quarantined_at), ' by ', c.quarantined_by || '—', ': ', c.quarantine_reason || '—',
          '. Nothing new is placed on it until an operator clears it; its instances keep running.') : null,
        c.draining ? drainStatus(c, drains[c.cell_id]) : null,
        bar('memory MB', cap.memory_mb, free.memory_mb),
        bar('disk MB', cap.disk_mb, free.disk_mb),
        bar('instances', cap.instances, free.instances),
        h('p', { class: 'muted small' }, 'rep ', c.rep_url || '—', ' · presence until ', fmtTime(c.expires_at)));
    }));
  }

  // drainStatus says how c's drain goes (GET /v1/cells/drain_status):
  // instances left, its deadline, whether it went ahead past it, and each
  // LRP whose disruption budget holds an evacuation, with why.
  function drainStatus(c, st) {
    const set = (v) => v && v !== '0';
    const line = h('p', { class: 'small', dataset: { testid: 'drain-status' } },
      'Draining since ', set(c.drain_started_at) ? fmtTime(c.drain_started_at) : '—',
      ' · deadline ', set(c.drain_deadline) ? fmtTime(c.drain_deadline) : 'none (waits for the budgets)',
      st ? ` · ${st.waiting || 0} waiting, ${st.evacuating || 0} evacuating` : '',
      set(c.drain_overdue_at) ? ` · went ahead past its deadline at ${fmtTime(c.drain_overdue_at)}` : '');
    const blocked = (st && st.blocked) || [];
    if (blocked.length === 0) return line;
    return h('div', null, line, h('ul', { class: 'small', dataset: { testid: 'drain-blocked' } }, blocked.map((b) => {
      const by = b.blocked_by || {};
      return h('li', { dataset: { lrp: b.process_guid } },
        h('a', { href: '#/lrps/' + encodeURIComponent(b.process_guid) }, b.process_guid), `: ${b.waiting || 0} waiting — `,
        h('span', { class: 'badge crashed' }, by.reason || 'blocked'), ' ', by.detail || '',
        set(by.since) ? ` (since ${fmtTime(by.since)})` : '');
    })));
  }

  async function reload() {
    try {
      cells = (await api.listCells()).sort((a, b) => a.cell_id.localeCompare(b.cell_id));
      const next = {};
      await Promise.all(cells.filter((c) => c.draining).map(async (c) => {
        try {
          next[c.cell_id] = (await api.call('/v1/cells/drain_status', { cell_id: c.cell_id })).status || {};
        } catch (err) {
          // The cell's card still shows; its drain line says nothing more.
        }
      }));
      drains = next;
      render();
    } catch (err) {
      replace(status, h('span', { class: 'error' }, err.type === 'Unauthorized'
        ? 'Only an operator certificate may list cells: ' + err.message : err.message));
    }
  }

  function later() { schedule('cells', reload); }

  function onEvent(type) {
    if (type === 'cell_changed' || type.startsWith('actual_lrp_')) later();
  }

  return { el, reload, onEvent };
}
