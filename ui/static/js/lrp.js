// The page of one LRP: its instances by cell, its rollout, its
// definitions with a diff between any two, its operations, and the
// actions on it.
import { h, replace, badge, coalesce, fmtTime, shortID, flash } from './dom.js';
import { confirmAction } from './dialog.js';
import { lineDiff, prettyLines } from './diff.js';
import { rolloutView } from './rollout.js';
import { operationsView } from './operations.js';
import { updateForm } from './update.js';
import { canPause, canResume, canPromote, canEdit, canAbort, canRollBack } from './actions.js';
import * as api from './api.js';

const PRESENCE_ORDER = { ORDINARY: 0, EVACUATING: 1, SUSPECT: 2, RETIRING: 3 };

// The instance table's columns: the row's own, then what the board's
// signals saw the instance (its index of its definition) do over their
// window (GET rollout status, instance_signals), then its address.
const INSTANCE_COLUMNS = ['index', 'state', 'presence', 'definition', 'routable', 'occupied', 'since', 'crashes',
  'crashes (window)', 'restarts', 'ready in', 'checks', 'failed', 'check p99', 'memory p99', 'address'];

export function lrpPage(guid) {
  const status = h('p', { class: 'muted' }, 'Loading…');
  const facts = h('dl', { class: 'facts' });
  const actions = h('div', { class: 'actions' });
  const rollout = rolloutView();
  const instances = h('tbody');
  const definitionsBody = h('tbody');
  const diffBox = h('div', { class: 'diff', dataset: { testid: 'definition-diff' } });
  const operations = operationsView(guid);
  let desired = null;
  const form = updateForm({ guid, current: () => desired });
  const el = h('section', { class: 'page', dataset: { testid: 'lrp-page', guid } },
    h('h1', null, h('a', { href: '#/lrps' }, 'LRPs'), ' / ', guid),
    status, facts, actions,
    h('h2', null, 'Rollout'), rollout.el,
    form.el,
    h('h2', null, 'Instances'),
    h('table', { class: 'grid', dataset: { testid: 'instances' } },
      h('thead', null, h('tr', null, INSTANCE_COLUMNS.map((t) => h('th', null, t)))),
      instances),
    h('h2', null, 'Definitions'),
    h('p', { class: 'muted small' }, 'Pick two (A and B) to see what changed between them.'),
    h('table', { class: 'grid', dataset: { testid: 'definitions' } },
      h('thead', null, h('tr', null, ['A', 'B', 'definition', 'created', 'memory MB', 'disk MB', '', ''].map((t) => h('th', null, t)))),
      definitionsBody),
    diffBox,
    h('h2', null, 'Operations'), operations.el);

  let actual = null; // null until read: the table says it is loading, not that there are none
  let definitions = [];
  let zones = null; // cell id → zone; null when cells may not be listed
  let rolloutStatus = null; // null until read: the actions wait for it
  // instanceSignals are the signals of each instance by "definition/index",
  // from the latest GET rollout status (a rollout_changed event's status
  // carries none, and leaves them as they were).
  let instanceSignals = new Map();
  let diffA = '';
  let diffB = '';
  let picked = false;
  const definitionCache = new Map();
  const schedule = coalesce();

  async function definition(id) {
    if (!definitionCache.has(id)) definitionCache.set(id, await api.getDefinition(guid, id));
    return definitionCache.get(id);
  }

  function renderFacts() {
    if (!desired) return;
    const a = desired.autoscaling;
    const strategy = desired.update_strategy || {};
    const fact = (k, v) => [h('dt', null, k), h('dd', null, v)];
    replace(facts,
      fact('domain', desired.domain || ''),
      fact('instances', String(desired.instances || 0)),
      fact('active definition', h('span', { class: 'mono', title: desired.active_definition_id }, shortID(desired.active_definition_id))),
      fact('healthy definition', h('span', { class: 'mono', title: desired.healthy_definition_id }, shortID(desired.healthy_definition_id))),
      fact('strategy', `surge ${strategy.max_surge || '1'}, unavailable ${strategy.max_unavailable || '0'}, min ready ${strategy.min_ready_ms || 0} ms${strategy.auto_revert ? ', auto-revert' : ''}`),
      fact('autoscaling', autoscaling(a, desired.autoscaler)),
      fact('disruption budget', disruptionBudget(desired.disruption_budget)),
      desired.annotation ? fact('annotation', desired.annotation) : null);
  }

  // buttons holds each action's button by name, with the rule (actions.js)
  // that says whether the board would accept it now.
  let buttons = [];

  // refreshActions enables each action the board would accept, and says
  // on the others why not (their tooltips). Until the page has read the
  // LRP and its rollout, every action waits.
  function refreshActions() {
    const loaded = desired !== null && rolloutStatus !== null;
    for (const { button, rule } of buttons) {
      const answer = loaded ? rule() : { ok: false, why: 'loading…' };
      button.disabled = !answer.ok;
      button.title = answer.ok ? '' : answer.why;
      button.parentElement.title = button.title; // a disabled button shows no tooltip in every browser
      for (const input of button.parentElement.querySelectorAll('input')) input.disabled = button.disabled; // promote's percent, edit's surge
      button.dataset.why = answer.why;
    }
  }

  function act(label, title, text, route, body, danger) {
    return h('button', {
      type: 'button', class: danger ? 'danger' : '', dataset: { action: label.toLowerCase() },
      on: { click: () => confirmAction({
        title, body: h('p', null, text), confirmLabel: label,
        act: async () => {
          await api.call(route, body());
          flash(`${label}: done`);
        },
      }) },
    }, label + '…');
  }

  function renderActions() {
    const promoteTo = h('input', { type: 'number', min: 0, max: 100, step: 'any', placeholder: '100', class: 'narrow', dataset: { testid: 'promote-to' }, attrs: { 'aria-label': 'promote to percent' } });
    const promote = h('button', {
      type: 'button', dataset: { action: 'promote' },
      on: { click: () => {
        const to = promoteTo.value === '' ? 100 : Number(promoteTo.value);
        confirmAction({
          title: `Promote ${guid} to ${to}%?`,
          body: h('p', null, `The next staged phase starts from the share that stands now and grows to ${to}% (100% finishes the rollout).`),
          confirmLabel: 'Promote',
          act: () => api.call('/v1/rollouts/promote', { process_guid: guid, to_percent: to }),
        });
      } },
    }, 'Promote…');
    // An edit in flight: the rollout under way goes on at this max_surge
    // (POST /v1/rollouts/edit); the board refuses a value that is not a
    // count or a percent, and the flash says why.
    const surge = h('input', { type: 'text', placeholder: '100%', class: 'narrow', dataset: { testid: 'edit-surge' }, attrs: { 'aria-label': 'max surge' } });
    const edit = h('button', {
      type: 'button', dataset: { action: 'edit' },
      on: { click: () => {
        const to = surge.value.trim() === '' ? '100%' : surge.value.trim();
        confirmAction({
          title: `Edit the rollout of ${guid}: max surge ${to}?`,
          body: h('p', null, `The rollout under way goes on with max surge ${to}; instances already replaced stay.`),
          confirmLabel: 'Edit',
          act: () => api.call('/v1/rollouts/edit', { process_guid: guid, max_surge: to }),
        });
      } },
    }, 'Edit surge…');
    const pause = act('Pause', `Pause the rollout of ${guid}?`, 'The staged phase stops growing; instances already moved stay.', '/v1/rollouts/pause', () => ({ process_guid: guid }));
    const resume = act('Resume', `Resume the rollout of ${guid}?`, 'The staged phase grows again from where it stood; a rollout its failure policy held goes on, judged again from now.', '/v1/rollouts/resume', () => ({ process_guid: guid }));
    const abort = act('Abort', `Abort the rollout of ${guid}?`, 'The rollout stops and the healthy definition is made active again, rolled back start-before-stop.', '/v1/rollouts/abort', () => ({ process_guid: guid }), true);
    const rollback = act('Rollback', `Roll ${guid} back?`, 'The healthy definition (or else the newest definition that ran; never one that failed validation) becomes active again and the instances roll over to it.', '/v1/rollouts/rollback', () => ({ process_guid: guid }), true);
    buttons = [
      { button: pause, rule: () => canPause(rolloutStatus) },
      { button: resume, rule: () => canResume(rolloutStatus) },
      { button: promote, rule: () => canPromote(rolloutStatus) },
      { button: edit, rule: () => canEdit(rolloutStatus) },
      { button: abort, rule: () => canAbort(rolloutStatus) },
      { button: rollback, rule: () => canRollBack(definitions) },
    ];
    const wrap = (button, ...before) => h('span', { class: 'group' }, ...before, button);
    replace(actions, wrap(pause), wrap(resume), wrap(promote, promoteTo), wrap(edit, surge), wrap(abort), wrap(rollback));
    refreshActions();
  }
  function renderInstances() {
    if (actual === null) {
      replace(instances, h('tr', null, h('td', { class: 'muted', attrs: { colspan: INSTANCE_COLUMNS.length }, dataset: { testid: 'loading' } }, 'Loading instances…')));
      return;
    }
    const rows = [...actual].sort((x, y) => (x.cell_id || '').localeCompare(y.cell_id || '') ||
      (x.index || 0) - (y.index || 0) || (PRESENCE_ORDER[x.presence] || 0) - (PRESENCE_ORDER[y.presence] || 0));
    const out = [];
    let cell = null;
    for (const r of rows) {
      const id = r.cell_id || '';
      if (id !== cell) {
        cell = id;
        const zone = zones === null ? '—' : zones.get(id) || '—';
        out.push(h('tr', { class: 'group' }, h('th', { attrs: { colspan: INSTANCE_COLUMNS.length } }, id ? `${id} · zone ${zone}` : 'not placed')));
      }
      const state = r.state || 'STATE_UNKNOWN';
      const presence = r.presence || 'PRESENCE_UNKNOWN';
      const ports = ((r.net_info || {}).ports || []).map((p) => p.host_port).filter(Boolean);
      const f = instanceSignals.get(`${r.definition_id || ''}/${r.index || 0}`);
      const signals = f ? {
        windowCrashes: String(f.crashes || 0), restarts: String(f.restarts || 0), checks: String(f.health_checks || 0),
        failed: String(f.health_check_failures || 0), memory: f.memory_mb_p99 === undefined ? '' : String(f.memory_mb_p99),
      } : {};
      out.push(h('tr', { dataset: { index: String(r.index || 0), definition: r.definition_id || '', state, presence, cell: id, ...signals } },
        h('td', { class: 'num' }, r.index || 0),
        h('td', null, badge(state, state.toLowerCase())),
        h('td', null, presence === 'ORDINARY' ? presence.toLowerCase() : badge(presence, presence.toLowerCase())),
        h('td', { class: 'mono', title: r.definition_id || '' }, shortID(r.definition_id),
          desired && r.definition_id === desired.active_definition_id ? ' (active)' : ''),
        h('td', null, r.routable ? 'yes' : 'no'),
        h('td', null, r.occupied ? 'yes' : 'no'),
        h('td', { class: 'small' }, fmtTime(r.since)),
        h('td', { class: 'num' }, r.crash_count || 0, r.crash_reason ? h('span', { class: 'muted', title: r.crash_reason }, ' ⓘ') : ''),
        ...signalCells(f),
        h('td', { class: 'mono small' }, r.net_info && r.net_info.address ? `${r.net_info.address}${ports.length ? ':' + ports.join(',') : ''}` : r.placement_error || '—')));
    }
    replace(instances, out.length ? out : h('tr', null, h('td', { class: 'muted', attrs: { colspan: INSTANCE_COLUMNS.length } }, 'No instances.')));
  }

  function renderDefinitions() {
    const sorted = [...definitions].sort((x, y) => Number(BigInt(y.created_at || 0) - BigInt(x.created_at || 0)));
    // Until the operator picks, B is the active definition and A the one
    // before it (the newest other), so a fresh update shows what it changed.
    const known = (id) => sorted.some((d) => d.definition_id === id);
    if (!picked || !known(diffB)) diffB = (sorted.find((d) => d.active) || sorted[0] || {}).definition_id || '';
    if (!picked || !known(diffA)) diffA = (sorted.find((d) => d.definition_id !== diffB) || {}).definition_id || '';
    replace(definitionsBody, sorted.map((d) => {
      const id = d.definition_id;
      const pick = (side) => h('input', {
        type: 'radio', name: 'diff-' + side, checked: (side === 'a' ? diffA : diffB) === id, attrs: { 'aria-label': `${side.toUpperCase()}: ${id}` },
        on: { change: () => {
          if (side === 'a') diffA = id;
          else diffB = id;
          picked = true;
          renderDiff();
        } },
      });
      const rollback = d.active ? null : h('button', {
        type: 'button', class: 'small', dataset: { action: 'rollback-to' },
        on: { click: () => confirmAction({
          title: `Roll ${guid} back to ${shortID(id)}?`,
          body: h('p', null, 'This definition becomes active again and the instances roll over to it, start-before-stop.'),
          confirmLabel: 'Roll back',
          act: () => api.call('/v1/rollouts/rollback', { process_guid: guid, definition_id: id }),
        }) },
      }, 'Roll back to…');
      return h('tr', { dataset: { definition: id } },
        h('td', null, pick('a')), h('td', null, pick('b')),
        h('td', { class: 'mono', title: id }, id),
        h('td', { class: 'small' }, fmtTime(d.created_at)),
        h('td', { class: 'num' }, d.memory_mb || 0),
        h('td', { class: 'num' }, d.disk_mb || 0),
        h('td', null, d.active ? badge('active', 'running') : null, ' ', d.healthy ? badge('healthy', 'finished') : null,
          ' ', d.failed_validation ? badge('failed validation', 'crashed') : null,
          ' ', !d.became_healthy && !d.failed_validation ? badge('never healthy', 'retiring') : null),
        h('td', null, rollback));
    }));
    renderDiff();
  }

  let diffRequest = 0;
  async function renderDiff() {
    const mine = ++diffRequest;
    if (!diffA || !diffB || diffA === diffB) {
      replace(diffBox, h('p', { class: 'muted small' }, diffA && diffA === diffB ? 'A and B are the same definition.' : 'Only one definition.'));
      return;
    }
    try {
      const [a, b] = await Promise.all([definition(diffA), definition(diffB)]);
      if (mine !== diffRequest) return;
      const lines = lineDiff(prettyLines(a), prettyLines(b));
      const changed = lines.filter((l) => l.op !== ' ').length;
      replace(diffBox,
        h('p', { class: 'small' }, `A ${shortID(diffA)} → B ${shortID(diffB)}: ${changed} line${changed === 1 ? '' : 's'} differ`),
        h('pre', { class: 'mono' }, lines.map((l) => h('div', { class: l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'same' }, l.op + ' ' + l.line))));
    } catch (err) {
      replace(diffBox, h('p', { class: 'error' }, err.message));
    }
  }

  async function loadDesired() {
    desired = await api.getDesired(guid);
    definitions = await api.listDefinitions(guid);
    renderFacts();
    renderDefinitions();
    refreshActions();
    if (desired.active_definition_id) form.show(await definition(desired.active_definition_id), desired);
  }
  async function loadActual() {
    actual = await api.listActual(guid);
    renderInstances();
  }
  async function loadRollout() {
    rolloutStatus = await api.rolloutStatus(guid);
    rollout.update(rolloutStatus);
    refreshActions();
    // The table is drawn again only when a figure it shows changed (the
    // window's span alone grows with every read).
    const next = new Map((rolloutStatus.definitions || []).flatMap((d) =>
      (d.instance_signals || []).map((f) => [`${d.definition_id}/${f.index || 0}`, f])));
    const shown = (m) => JSON.stringify([...m].map(([key, f]) => [key, { ...f, window_ms: undefined }]));
    if (shown(next) === shown(instanceSignals)) return;
    instanceSignals = next;
    renderInstances();
  }
  // operationsRead numbers the reads of the newest page: a reload's and an
  // event's may be out at once, and only the last asked for is drawn.
  let operationsRead = 0;
  async function loadOperations() {
    const mine = ++operationsRead;
    const page = await api.listOperations(guid);
    if (mine === operationsRead) operations.update(page);
  }
  async function loadZones() {
    try {
      zones = new Map((await api.listCells()).map((c) => [c.cell_id, c.zone || '']));
    } catch (err) {
      if (err.type !== 'Unauthorized') throw err;
      zones = null; // an api-client certificate may not list cells
    }
    renderInstances();
  }

  function fail(err) {
    replace(status, h('span', { class: 'error' }, err.type === 'ResourceNotFound' ? `${guid} is not desired (${err.message})` : err.message));
  }

  async function reload() {
    try {
      renderActions();
      await loadZones();
      await Promise.all([loadDesired(), loadActual(), loadRollout(), loadOperations()]);
      replace(status);
    } catch (err) {
      fail(err);
    }
  }

  function later(key, fn) {
    schedule(key, () => fn().catch(fail));
  }

  function onEvent(type, payload) {
    if (type === 'cell_changed') {
      later('zones', loadZones);
      return;
    }
    if (api.eventGuid(type, payload) !== guid) return;
    if (type === 'desired_lrp_removed') {
      replace(status, h('span', { class: 'error' }, `${guid} was removed.`));
    } else if (type.startsWith('desired_lrp_')) {
      later('desired', loadDesired);
    } else if (type.startsWith('actual_lrp_')) {
      later('actual', loadActual);
      // Before its first rollout an LRP has no rollout_changed events;
      // its bar counts the running instances, which this changed. A crash
      // or a start changes the signals, which only GET rollout status has.
      if (!rolloutStatus || !rolloutStatus.state || rolloutStatus.state === 'NONE' || type === 'actual_lrp_crashed' || type === 'actual_lrp_changed') later('rollout', loadRollout);
    } else if (type === 'rollout_changed' && payload.status) {
      rolloutStatus = payload.status;
      rollout.update(rolloutStatus);
      refreshActions();
    } else if (type === 'operation_changed') {
      later('operations', loadOperations);
    } else if (type === 'definition_health') {
      // A cell's health report changes the signals (GET rollout status).
      later('rollout', loadRollout);
    }
  }

  return { el, reload, onEvent, tick: () => rollout.tick() };
}

// signalCells are the instance table's signal columns for f (an
// InstanceSignals as JSON), empty cells without it (the board keeps no
// signals, or has not heard of the instance): window crashes (the latest
// reason as the title), restarts, the latest time to ready, checks, how
// many failed, the checks' latency p99 and the memory p99.
function signalCells(f) {
  if (!f) return INSTANCE_COLUMNS.slice(8, 15).map(() => h('td', { class: 'num muted' }, '—'));
  const some = (v, fmt) => (v === undefined ? '—' : fmt(Number(v)));
  return [
    h('td', { class: 'num', title: f.last_crash_reason || '' }, f.crashes || 0),
    h('td', { class: 'num' }, f.restarts || 0),
    h('td', { class: 'num' }, some(f.time_to_ready_ms, fmtMs)),
    h('td', { class: 'num' }, f.health_checks || 0),
    h('td', { class: 'num' }, f.health_check_failures || 0),
    h('td', { class: 'num' }, some(f.health_latency_p99_ms, fmtMs)),
    h('td', { class: 'num' }, some(f.memory_mb_p99, (mb) => `${mb} MB`)),
  ];
}

// fmtMs is a duration in ms as "850 ms" below a second, else "1.5 s".
function fmtMs(ms) {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

// disruptionBudget says how many of the LRP's indices voluntary
// disruptions may take down at once (docs/disruption-budget.md), and the
// budget group it shares with other LRPs, if any.
function disruptionBudget(budget) {
  const b = budget || {};
  const own = b.max_unavailable ? b.max_unavailable : "the strategy's max_unavailable";
  return b.group ? `${own} · group ${b.group}` : own;
}

// autoscaling says whether the LRP scales itself, between what bounds, and
// the autoscaler's last decision.
function autoscaling(settings, status) {
  if (!settings || !settings.enabled) return 'off';
  const text = `on, ${settings.min || 0}–${settings.max || 0} instances`;
  const last = status && status.last_decision;
  if (!last) return text;
  return `${text}; last decision at ${fmtTime(last.at)}: ${last.previous_instances || 0} → ${last.instances || 0} (${last.occupied || 0} occupied, wanted ${last.wanted || 0})${last.reason ? ', ' + last.reason : ''}`;
}
