// The update form of the LRP page: change the active definition's JSON (and
// optionally the instance count and the update strategy), see the plan of
// the rollout it would start (POST /v1/rollouts/plan), and confirm.
import { h, replace, fmtDuration, shortID } from './dom.js';
import { confirmAction } from './dialog.js';
import * as api from './api.js';

// editable is a definition as the form shows it: without what the board
// sets itself (its id and creation time).
export function editable(definition) {
  const copy = { ...definition };
  delete copy.definition_id;
  delete copy.created_at;
  return copy;
}

export function updateForm({ guid, current }) {
  const text = h('textarea', { class: 'mono', rows: 16, spellcheck: false, dataset: { testid: 'update-definition' }, attrs: { 'aria-label': 'definition JSON' } });
  let edited = false;
  text.addEventListener('input', () => { edited = true; });
  const field = (name, label, placeholder) => h('label', null, label, h('input', { name, placeholder: placeholder || '', dataset: { testid: 'update-' + name } }));
  const instances = field('instances', 'instances');
  const surge = field('max_surge', 'max surge');
  const unavailable = field('max_unavailable', 'max unavailable');
  const minReady = field('min_ready_ms', 'min ready ms');
  const readyAfter = field('ready_after_ms', 'plan: ready after ms', '2000');
  // A staged rollout: the new definition on a share of the instances that
  // grows at a rate to a target, e.g. target 50, 10% per 60000 ms.
  const stagedTarget = field('staged_target', 'staged: target %', 'not staged');
  const stagedRate = field('staged_rate', 'staged: rate %', 'at once');
  const stagedPer = field('staged_per_ms', 'staged: per ms');
  const problem = h('p', { class: 'error' });
  const review = h('button', { type: 'button', class: 'primary', dataset: { testid: 'update-review' }, on: { click: () => submit() } }, 'Review plan and update…');
  const el = h('details', { class: 'card update', dataset: { testid: 'update-form' } },
    h('summary', null, 'Update the definition…'),
    h('p', { class: 'muted' }, 'A changed definition becomes a new version and rolls the instances over, start-before-stop. Leave a field empty to keep what is set.'),
    text,
    h('div', { class: 'fields' }, instances, surge, unavailable, minReady, readyAfter),
    h('div', { class: 'fields' }, stagedTarget, stagedRate, stagedPer),
    problem, review);

  // show fills the form with the active definition, unless the operator
  // is editing it.
  function show(definition, desired) {
    if (!edited) text.value = JSON.stringify(editable(definition), null, 2);
    const strategy = (desired && desired.update_strategy) || {};
    instances.lastChild.placeholder = String((desired && desired.instances) || 0);
    surge.lastChild.placeholder = strategy.max_surge || '1';
    unavailable.lastChild.placeholder = strategy.max_unavailable || '0';
    minReady.lastChild.placeholder = String(strategy.min_ready_ms || 0);
  }

  function value(label) { return label.lastChild.value.trim(); }

  function buildUpdate() {
    const update = {};
    let definition;
    try {
      definition = JSON.parse(text.value);
    } catch (err) {
      throw new Error('definition: not JSON: ' + err.message);
    }
    update.definition = definition;
    if (value(instances) !== '') {
      const n = Number(value(instances));
      if (!Number.isInteger(n) || n < 0) throw new Error('instances: a whole number of 0 or more');
      update.instances = n;
    }
    const desired = current();
    if (value(surge) || value(unavailable) || value(minReady)) {
      const strategy = { ...((desired && desired.update_strategy) || {}) };
      if (value(surge)) strategy.max_surge = value(surge);
      if (value(unavailable)) strategy.max_unavailable = value(unavailable);
      if (value(minReady)) strategy.min_ready_ms = value(minReady);
      update.update_strategy = strategy;
    }
    if (value(stagedTarget) !== '') {
      update.staged = { target_percent: Number(value(stagedTarget)) };
      if (value(stagedRate) !== '' || value(stagedPer) !== '') {
        update.staged.safe_rate = { percent: Number(value(stagedRate)), per_ms: value(stagedPer) };
      }
    }
    if (desired && desired.modification_tag) update.modification_tag = desired.modification_tag;
    return update;
  }

  function submit() {
    replace(problem);
    let update;
    try {
      update = buildUpdate();
    } catch (err) {
      replace(problem, err.message);
      return;
    }
    const planBox = h('div', { class: 'plan', dataset: { testid: 'plan' } }, h('p', { class: 'muted' }, 'Planning…'));
    const readyAfterMs = value(readyAfter) === '' ? 2000 : Number(value(readyAfter));
    api.call('/v1/rollouts/plan', { process_guid: guid, update, ready_after_ms: readyAfterMs })
      .then((answer) => replace(planBox, planTable(answer.plan || {})))
      .catch((err) => replace(planBox, h('p', { class: 'warning', dataset: { testid: 'plan-unavailable' } }, 'plan unavailable: ' + err.message)));
    confirmAction({
      title: `Update ${guid}?`,
      body: [h('p', null, 'What the rollout would do, pass by pass:'), planBox],
      confirmLabel: 'Update',
      act: async () => {
        await api.call('/v1/desired_lrps/update', { process_guid: guid, update });
        edited = false;
        for (const label of [instances, surge, unavailable, minReady, stagedTarget, stagedRate, stagedPer]) label.lastChild.value = '';
        el.open = false;
      },
    });
  }

  return { el, show };
}

// planTable renders a RolloutPlan: one row a pass.
export function planTable(plan) {
  const ms = (v) => fmtDuration(Number(v || 0));
  const passes = plan.passes || [];
  return h('div', null,
    h('p', null,
      h('span', { class: 'mono', title: plan.from_definition_id }, shortID(plan.from_definition_id)), ' → ',
      h('span', { class: 'mono', title: plan.to_definition_id }, shortID(plan.to_definition_id)),
      ` · ${plan.instances || 0} instances, surge ${plan.max_surge || 0}, unavailable ${plan.max_unavailable || 0}, min ready ${ms(plan.min_ready_ms)}`,
      ` · ${plan.completes ? 'completes' : 'does not complete'} in about ${ms(plan.projected_ms)}`,
      plan.stopped_reason ? ` (${plan.stopped_reason})` : ''),
    h('table', { class: 'grid compact', dataset: { testid: 'plan-passes' } },
      h('thead', null, h('tr', null, ['pass', 'at', 'starts', 'stops', 'available', 'surged', 'updated', 'why'].map((t) => h('th', null, t)))),
      h('tbody', null, passes.map((p, i) => h('tr', null,
        h('td', { class: 'num' }, i + 1),
        h('td', { class: 'num' }, '+' + ms(p.at_ms)),
        h('td', null, (p.starts || []).map((st) => `#${st.index || 0} on ${st.cell_id || '?'}${st.zone ? ' (' + st.zone + ')' : ''}`).join(', ')),
        h('td', null, (p.stops || []).map((x) => '#' + x).join(', ')),
        h('td', { class: 'num' }, p.available || 0),
        h('td', { class: 'num' }, p.surged || 0),
        h('td', { class: 'num' }, p.updated || 0),
        h('td', { class: 'small' }, (p.reasons || []).join('; ')))))));
}
