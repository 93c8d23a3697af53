// The LRPs page: every DesiredLRP with its instances by state, its active
// and healthy definitions, its rollout and its autoscaling.
import { h, replace, shortID, badge, coalesce } from './dom.js';
import * as api from './api.js';

const STATES = ['RUNNING', 'CLAIMED', 'UNCLAIMED', 'CRASHED'];

export function lrpsPage() {
  const body = h('tbody');
  const status = h('p', { class: 'muted' }, 'Loading…');
  const el = h('section', { class: 'page', dataset: { testid: 'lrps-page' } },
    h('h1', null, 'Long-running processes'),
    status,
    h('table', { class: 'grid', dataset: { testid: 'lrps' } },
      h('thead', null, h('tr', null,
        h('th', null, 'Process'), h('th', null, 'Domain'), h('th', { class: 'num' }, 'Desired'),
        h('th', null, 'Instances by state'), h('th', null, 'Active'), h('th', null, 'Healthy'),
        h('th', null, 'Rollout'), h('th', null, 'Autoscaling'))),
      body));

  let desired = null; // null until read: an event before then renders nothing, not "No LRPs"
  const actual = new Map(); // guid → ActualLRP[]
  const rollouts = new Map(); // guid → RolloutStatus
  const schedule = coalesce();

  function render() {
    if (desired === null) return;
    replace(status, desired.length === 0 ? 'No LRPs are desired.' : `${desired.length} LRP${desired.length === 1 ? '' : 's'}`);
    replace(body, desired.map((d) => {
      const guid = d.process_guid;
      const rows = actual.get(guid) || [];
      const counts = new Map();
      for (const r of rows) {
        const key = r.presence && r.presence !== 'ORDINARY' ? r.presence : r.state || 'STATE_UNKNOWN';
        counts.set(key, (counts.get(key) || 0) + 1);
      }
      const keys = [...STATES, ...[...counts.keys()].filter((k) => !STATES.includes(k)).sort()];
      const rollout = rollouts.get(guid) || {};
      const a = d.autoscaling;
      return h('tr', { dataset: { guid } },
        h('td', null, h('a', { href: '#/lrps/' + encodeURIComponent(guid) }, guid)),
        h('td', null, d.domain || ''),
        h('td', { class: 'num' }, d.instances || 0),
        h('td', null, keys.filter((k) => counts.get(k)).map((k) => badge(`${k} ${counts.get(k)}`, k.toLowerCase()))),
        h('td', { class: 'mono', title: d.active_definition_id }, shortID(d.active_definition_id)),
        h('td', { class: 'mono', title: d.healthy_definition_id }, shortID(d.healthy_definition_id)),
        h('td', null, rolloutSummary(rollout)),
        h('td', null, a && a.enabled ? `on, ${a.min || 0}–${a.max || 0}` : 'off'));
    }));
  }

  async function loadActual(guid) {
    actual.set(guid, await api.listActual(guid));
  }

  // Reloads may overlap (the first read and the stream going live); only
  // the latest one's answers are kept.
  let generation = 0;
  async function reload() {
    const mine = ++generation;
    try {
      const list = (await api.listSchedulingInfos()).sort((x, y) => x.process_guid.localeCompare(y.process_guid));
      const rows = await api.listActual();
      const byGuid = new Map();
      for (const row of rows) {
        if (!byGuid.has(row.process_guid)) byGuid.set(row.process_guid, []);
        byGuid.get(row.process_guid).push(row);
      }
      const moving = list.filter((d) => inMotion(d, byGuid.get(d.process_guid) || []));
      const statuses = await inBatches(moving, 8, (d) => api.rolloutStatus(d.process_guid));
      if (mine !== generation) return;
      desired = list;
      actual.clear();
      for (const [guid, guidRows] of byGuid) actual.set(guid, guidRows);
      rollouts.clear();
      moving.forEach((d, i) => rollouts.set(d.process_guid, statuses[i]));
      render();
    } catch (err) {
      replace(status, h('span', { class: 'error' }, err.message));
    }
  }

  function later(key, fn) {
    schedule(key, async () => {
      try {
        await fn();
        render();
      } catch (err) {
        replace(status, h('span', { class: 'error' }, err.message));
      }
    });
  }

  function onEvent(type, payload) {
    const guid = api.eventGuid(type, payload);
    if (type.startsWith('desired_lrp_')) later('desired', reload);
    else if (type.startsWith('actual_lrp_') && guid) later('actual:' + guid, () => loadActual(guid));
    else if (type === 'rollout_changed' && payload.status) {
      rollouts.set(guid, payload.status);
      render();
    }
  }

  return { el, reload, onEvent };
}

// inMotion says whether an LRP's rollout is worth asking for on the list:
// its active definition is not the healthy one (a rollout under way,
// failed or holding), or an instance runs another definition or is
// RETIRING (a rollback moving back). The others are settled (NONE or
// COMPLETE) and the list shows "—" for them: asking for each LRP's status
// on a board of thousands of LRPs would be thousands of calls per reload.
// A rollout that starts later arrives as a rollout_changed event.
function inMotion(d, rows) {
  if (d.active_definition_id !== d.healthy_definition_id) return true;
  return rows.some((r) => r.definition_id !== d.active_definition_id || r.presence === 'RETIRING');
}

// inBatches calls fn on every item, at most `width` calls at a time (the
// board answers ResourceExhausted beyond its in-flight limit), and
// returns the answers in the items' order.
async function inBatches(items, width, fn) {
  const out = new Array(items.length);
  let next = 0;
  async function worker() {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return out;
}

export function rolloutSummary(r) {
  const state = r.state || 'NONE';
  if (state === 'NONE') return h('span', { class: 'muted' }, '—');
  const n = r.instances || 0;
  return [badge(state, state.toLowerCase()), ' ', `${r.updated_instances || 0}/${n}`,
    r.in_flight ? ` (${r.in_flight} in flight)` : ''];
}
