// The operations timeline of the LRP page: newest first, each with its
// status, kind, who asked, its times and its history.
import { h, replace, badge, fmtTime, fmtClock, shortID } from './dom.js';
import { nanosToMs } from './share.js';
import { confirmAction } from './dialog.js';
import * as api from './api.js';

// The board answers a page of operations at a time, newest first; the
// view shows the newest page, kept current from the events, and the older
// pages the operator asked for.
export function operationsView(guid) {
  const list = h('ol', { class: 'timeline', dataset: { testid: 'operations' } }, h('li', { class: 'muted' }, 'Loading operations…'));
  const more = h('button', { type: 'button', class: 'small', hidden: true, dataset: { action: 'older-operations' }, on: { click: () => loadOlder() } }, 'Older operations…');
  const problem = h('p', { class: 'error' });
  const el = h('div', null, list, more, problem);
  let newest = [];
  let older = [];
  let cursor = '';

  // update takes the newest page as read again after a change.
  function update(page) {
    newest = page.operations;
    if (older.length === 0) cursor = page.next_cursor;
    render();
  }

  async function loadOlder() {
    try {
      const page = await api.listOperations(guid, cursor);
      older = older.concat(page.operations);
      cursor = page.next_cursor;
      render();
    } catch (err) {
      replace(problem, err.message);
    }
  }

  function render() {
    const byID = new Map();
    for (const op of [...older, ...newest]) byID.set(op.id, op);
    const sorted = [...byID.values()].sort((a, b) => Number(BigInt(b.sequence || 0) - BigInt(a.sequence || 0)));
    more.hidden = cursor === '';
    if (sorted.length === 0) {
      replace(list, h('li', { class: 'muted' }, 'No operations.'));
      return;
    }
    replace(list, sorted.map(entry));
  }

  function entry(op) {
    const status = op.status || 'STATUS_UNKNOWN';
    const open = status === 'PENDING' || status === 'IN_PROGRESS';
    const cancel = open ? h('button', {
      type: 'button', class: 'small danger', dataset: { action: 'cancel-operation' },
      on: { click: () => confirmAction({
        title: `Cancel ${(op.kind || '').toLowerCase()} operation?`,
        body: h('p', null, 'A rollout in progress is aborted and rolled back; a pending operation does not run. Operation ', h('span', { class: 'mono' }, op.id), '.'),
        confirmLabel: 'Cancel operation',
        act: () => api.call('/v1/operations/cancel', { id: op.id }),
      }) },
    }, 'Cancel…') : null;
    return h('li', { class: 'op ' + status.toLowerCase(), dataset: { kind: op.kind || '', status, id: op.id } },
      h('div', { class: 'op-head' },
        badge(status, status.toLowerCase()), ' ',
        h('strong', null, op.kind || 'KIND_UNKNOWN'), ' ',
        op.definition_id ? h('span', { class: 'mono', title: op.definition_id }, shortID(op.definition_id)) : '', ' ',
        h('span', { class: 'muted' }, 'by ', op.requested_by || 'unknown'),
        h('span', { class: 'spacer' }), cancel),
      h('div', { class: 'muted small' },
        'created ', fmtTime(op.created_at),
        op.started_at ? ' · started ' + fmtTime(op.started_at) : '',
        op.finished_at ? ' · finished ' + fmtTime(op.finished_at) : ''),
      op.reason ? h('div', { class: 'reason' }, op.reason) : null,
      open ? blocked(op.blocked_by) : null,
      (op.history || []).length ? h('ul', { class: 'history' }, op.history.map((e) =>
        h('li', null, h('span', { class: 'muted mono' }, fmtClock(nanosToMs(e.at))), ' ', e.message || ''))) : null);
  }

  // blocked says what holds an operation under way (its blocked_by: its
  // rollout's, or a validation's, which has no rollout yet).
  function blocked(b) {
    if (!b || !b.reason) {
      return null;
    }
    return h('div', { class: 'blocked', dataset: { testid: 'operation-blocked' } },
      h('span', { class: 'badge blocked' }, `blocked: ${b.reason}`), ' ',
      b.since ? `since ${fmtClock(nanosToMs(b.since))} · ` : '',
      b.detail || '');
  }

  return { el, update };
}
