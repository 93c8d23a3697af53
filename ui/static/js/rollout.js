// The rollout section of the LRP page: a progress bar of the instances on
// the active definition with the replacements in flight, the deadline
// counting down, and, for a staged phase, the share curve with the
// active instances seen while the page is open.
import { h, s, replace, badge, fmtDuration, fmtClock, shortID } from './dom.js';
import { nanosToMs, stageClock, shareAt, allowedInstances, curvePoints, targetReachedMs } from './share.js';

// updatedInstances is how many instances are on the active definition:
// the rollout's count while there is a rollout; before the LRP's first
// one (state NONE) the running instances of its only definition.
export function updatedInstances(status) {
  if (status.state && status.state !== 'NONE') return status.updated_instances || 0;
  const active = (status.definitions || []).find((d) => d.definition_id === status.active_definition_id);
  return Math.min(status.instances || 0, (active && active.running) || 0);
}

// progressPercent is the share of instances on the active definition,
// rounded down so that 100 means every one: 5 of 6 is 83, 6 of 6 is 100.
// An LRP of 0 instances is trivially all updated.
export function progressPercent(status) {
  const n = status.instances || 0;
  if (n === 0) return 100;
  return Math.floor((updatedInstances(status) * 100) / n);
}

export function rolloutView() {
  const updatedFill = h('div', { class: 'fill' });
  const flightFill = h('div', { class: 'fill inflight' });
  const bar = h('div', {
    class: 'progress', dataset: { testid: 'rollout-progress', percent: '0' },
    attrs: { role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': 0, 'aria-label': 'instances on the active definition' },
  }, updatedFill, flightFill);
  // Until the first status arrives the summary says so, rather than show
  // an LRP of no rollout and 0 instances.
  const summary = h('div', { class: 'rollout-summary muted', dataset: { testid: 'rollout-summary' } }, 'Loading the rollout…');
  const clocks = h('div', { class: 'rollout-clocks muted', dataset: { testid: 'rollout-clocks' } });
  const stageBox = h('div', { class: 'stage' });
  const signalsBox = h('div', { class: 'signals', dataset: { testid: 'rollout-signals' } });
  const verdictBox = h('div', { class: 'verdicts', dataset: { testid: 'rollout-verdicts' } });
  // The bar's legend: its two segments as drawn (app.css .progress).
  const barLegend = h('ul', { class: 'legend', dataset: { testid: 'progress-legend' } },
    h('li', { dataset: { legend: 'updated' } }, h('span', { class: 'swatch updated', attrs: { 'aria-hidden': 'true' } }), 'instances on the active definition'),
    h('li', { dataset: { legend: 'inflight' } }, h('span', { class: 'swatch inflight', attrs: { 'aria-hidden': 'true' } }), 'replacements in flight'));
  const el = h('div', { class: 'rollout' }, summary, bar, barLegend, clocks, stageBox, signalsBox, verdictBox);
  let status = {};
  // observed holds {t, active, instances} from each rollout_changed of a
  // staged phase while the page is open, for the curve's dots.
  let observed = [];

  function update(next) {
    const phase = next.stage && next.stage.phase_started_at;
    const before = status.stage && status.stage.phase_started_at;
    if (phase !== before) observed = [];
    next = keepSignals(status, next || {});
    status = next;
    if (status.stage) {
      observed.push({ t: Date.now(), active: status.stage.active_instances || 0, instances: status.instances || 0 });
      if (observed.length > 500) observed.shift();
    }
    render();
  }

  function render() {
    const n = status.instances || 0;
    const percent = progressPercent(status);
    // The in-flight segment follows the updated one: with 2 of 6 updated
    // and 1 in flight it spans 33% to 50%.
    const flight = n > 0 ? Math.min(100 - percent, ((status.in_flight || 0) * 100) / n) : 0;
    updatedFill.style.width = percent + '%';
    flightFill.style.width = flight + '%';
    bar.dataset.percent = String(percent);
    bar.setAttribute('aria-valuenow', String(percent));
    const updated = updatedInstances(status);
    bar.setAttribute('aria-valuetext', `${updated} of ${n} on the active definition`);
    const state = status.state || 'NONE';
    summary.classList.remove('muted');
    replace(summary,
      badge(state, state.toLowerCase()), ' ',
      h('strong', { dataset: { testid: 'rollout-percent' } }, percent + '%'), ' ',
      `${updated} of ${n} instances on `,
      h('span', { class: 'mono', title: status.active_definition_id }, shortID(status.active_definition_id)),
      status.in_flight ? ` · ${status.in_flight} in flight` : '',
      // A rollout the governor (max_rollouts_in_flight) keeps waiting:
      // its place in the queue; the reason below says of how many.
      status.queue_position ? [' · ', h('span', { class: 'badge queued', dataset: { testid: 'rollout-queue-position' } }, `queued #${status.queue_position}`)] : '',
      status.failed_definition_id ? [' · failed ', h('span', { class: 'mono' }, shortID(status.failed_definition_id))] : '',
      status.reason ? h('div', { class: 'muted' }, status.reason) : '',
      blockedLine(status.blocked_by));
    tick();
    renderStage();
    renderSignals();
    renderVerdicts();
  }

  // blockedLine says what blocks the rollout (its blocked_by, which the
  // planner computes every pass): the reason, since when, the detail, and
  // when it is expected to move if the board can tell; nothing while no
  // cause holds it.
  function blockedLine(b) {
    if (!b || !b.reason) {
      return '';
    }
    return h('div', { class: 'blocked', dataset: { testid: 'rollout-blocked' } },
      h('span', { class: 'badge blocked', dataset: { testid: 'rollout-blocked-reason' } }, `blocked: ${b.reason}`), ' ',
      b.since ? `since ${fmtClock(nanosToMs(b.since))} · ` : '',
      b.detail || '',
      b.estimate ? ` · expected to move at ${fmtClock(nanosToMs(b.estimate))}` : '');
  }

  // renderVerdicts is the verdict panel: what judges the rollout (its
  // analysis, failure policy and bake) and its latest verdicts, newest
  // first, each check's numbers and bounds in its reason.
  function renderVerdicts() {
    const j = status.judgement;
    if (!j) {
      replace(verdictBox);
      return;
    }
    const checks = (j.analysis && j.analysis.checks) || [];
    const policy = [
      checks.length ? `${checks.length} check${checks.length === 1 ? '' : 's'} every ${fmtDuration(Number((j.analysis && j.analysis.interval_ms) || 10000))}` : 'no analysis',
      `on failure: ${j.on_failure || 'default'}`,
      `on marginal: ${j.on_marginal || 'continue'}`,
      j.bake_ms ? `bake ${fmtDuration(Number(j.bake_ms))}${j.bake_started_at ? ' since ' + fmtClock(nanosToMs(j.bake_started_at)) : ''}` : '',
    ].filter(Boolean).join(' · ');
    const verdicts = [...(j.verdicts || [])].reverse().slice(0, 10);
    replace(verdictBox,
      h('h3', null, 'Verdicts'),
      h('p', { class: 'muted', dataset: { testid: 'verdict-policy' } }, policy),
      verdicts.length === 0 ? h('p', { class: 'muted' }, 'No verdict yet.') :
        h('table', { class: 'grid' },
          h('thead', null, h('tr', null, ...['Verdict', 'At', 'During', 'Definition', 'Checks'].map((t) => h('th', null, t)))),
          h('tbody', null, ...verdicts.map((v) => h('tr', { dataset: { testid: 'verdict' } },
            h('td', null, badge(v.outcome || 'UNKNOWN', String(v.outcome || '').toLowerCase())),
            h('td', null, fmtClock(nanosToMs(v.at))),
            h('td', null, v.during || ''),
            h('td', { class: 'mono' }, shortID(v.definition_id), v.baseline_definition_id ? [' vs ', shortID(v.baseline_definition_id)] : ''),
            h('td', null, ...(v.checks || []).map((c) => h('div', null, badge(c.outcome || 'UNKNOWN', String(c.outcome || '').toLowerCase()), ' ', c.reason || c.name))))))));
  }

  // renderSignals lists, per definition the board sent signals for, what
  // its instances did over the board's window.
  function renderSignals() {
    const rows = (status.definitions || []).filter((d) => d.signals).map((d) => {
      const f = d.signals;
      return h('tr', null,
        h('td', { class: 'mono', title: d.definition_id }, shortID(d.definition_id)),
        h('td', null, fmtDuration(Number(f.window_ms || 0))),
        h('td', null, String(f.crashes || 0)),
        h('td', null, (f.crash_rate || 0).toPrecision(3)),
        h('td', null, f.top_crash_reason || ''),
        h('td', null, String(f.readied || 0)),
        h('td', null, f.readied ? `${fmtDuration(Number(f.time_to_ready_p50_ms || 0))} / ${fmtDuration(Number(f.time_to_ready_p99_ms || 0))}` : ''),
        h('td', null, String(f.health_checks || 0)),
        h('td', null, f.health_checks ? `${f.health_check_failures || 0} (${(f.health_failure_rate || 0).toPrecision(3)})` : ''),
        h('td', null, f.health_latency_p99_ms !== undefined ? fmtDuration(Number(f.health_latency_p99_ms)) : ''),
        h('td', null, f.memory_mb_p99 !== undefined ? `${Number(f.memory_mb_p99)} MB` : ''));
    });
    if (rows.length === 0) {
      replace(signalsBox);
      return;
    }
    replace(signalsBox, h('table', { class: 'grid' },
      h('thead', null, h('tr', null, ...['Definition', 'Window', 'Crashes', 'Per instance per minute', 'Most often', 'Ready', 'Start to ready p50 / p99',
        'Health checks', 'Failed (share)', 'Check latency p99', 'Memory p99'].map((t) => h('th', null, t)))),
      h('tbody', null, ...rows)));
  }

  // tick redraws what depends on the local clock: elapsed, deadline, and
  // the "now" of the share curve.
  function tick() {
    const now = Date.now();
    const started = nanosToMs(status.started_at);
    const finished = nanosToMs(status.finished_at);
    const deadline = nanosToMs(status.deadline_at);
    const parts = [];
    if (started) parts.push(`started ${fmtClock(started)}, ${finished ? 'took' : 'running for'} ${fmtDuration((finished || now) - started)}`);
    // The board sets deadline_at while the rollout moves (progressing,
    // or reverting), and clears it while a staged phase is paused.
    if (deadline && !finished) {
      const left = deadline - now;
      parts.push(left > 0 ? `deadline in ${fmtDuration(left)}` : `deadline passed ${fmtDuration(-left)} ago`);
    }
    clocks.textContent = parts.join(' · ');
    if (status.stage) renderStage();
  }

  function renderStage() {
    const stage = status.stage;
    if (!stage) {
      replace(stageBox);
      return;
    }
    const clock = stageClock(stage);
    const now = Date.now();
    const share = shareAt(clock, now);
    const n = status.instances || 0;
    replace(stageBox,
      h('p', null,
        'Staged phase: ', `${clock.prior}% → ${clock.target}%`,
        clock.percent > 0 && clock.perMs > 0 ? ` at ${clock.percent}% per ${fmtDuration(clock.perMs)}` : ' at once',
        ` · share now ${share.toFixed(1)}% (${allowedInstances(share, n)} of ${n} allowed, ${stage.active_instances || 0} active)`,
        targetText(stage, now),
        stage.paused ? [' ', badge('paused', 'retiring'), stage.pause_reason ? ' ' + stage.pause_reason : ''] : ''),
      shareCurve(clock, now, observed),
      shareLegend());
  }

  return { el, update, tick };
}

// keepSignals gives next's definitions the signals prev had for them when
// next carries none: a rollout_changed event's status has no signals (the
// answering board adds them to GET rollout status only).
function keepSignals(prev, next) {
  const had = new Map((prev.definitions || []).filter((d) => d.signals).map((d) => [d.definition_id, d.signals]));
  if (had.size === 0 || (next.definitions || []).some((d) => d.signals)) return next;
  return { ...next, definitions: (next.definitions || []).map((d) => (had.has(d.definition_id) ? { ...d, signals: had.get(d.definition_id) } : d)) };
}

// targetText says when the phase reaches its target: " · target at
// 12:04:30 (in 25s)" before, " · target reached at 12:04:30" after (the
// status read before then still names the time; the board's next pass
// makes a phase below 100% HOLDING), "" when the board names no time
// (reached when read, or paused).
export function targetText(stage, now) {
  const at = nanosToMs(stage.target_at);
  if (!at) return '';
  if (at <= now) return ` · target reached at ${fmtClock(at)}`;
  return ` · target at ${fmtClock(at)} (in ${fmtDuration(at - now)})`;
}

// shareLegend names what the share curve draws, each with its mark as
// drawn (the classes of app.css's svg.curve and .legend).
function shareLegend() {
  const item = (kind, text) => h('li', { dataset: { legend: kind } }, h('span', { class: 'swatch ' + kind, attrs: { 'aria-hidden': 'true' } }), text);
  return h('ul', { class: 'legend', dataset: { testid: 'share-legend' } },
    item('share', 'allowed share of instances on the new definition'),
    item('target', "the phase's target"),
    item('now', 'now'),
    item('observed', 'active instances seen while this page is open (share of all)'));
}

// shareCurve draws share(t) over the phase, the target, "now", and the
// observed active instances as a percentage of all.
function shareCurve(clock, now, observed) {
  const W = 520;
  const H = 170;
  const pad = { l: 40, r: 10, t: 10, b: 24 };
  const from = clock.startedMs || now;
  const to = Math.max(now, targetReachedMs(clock), from + 60000, ...observed.map((o) => o.t));
  const x = (t) => pad.l + ((t - from) / (to - from)) * (W - pad.l - pad.r);
  const y = (p) => pad.t + (1 - p / 100) * (H - pad.t - pad.b);
  const points = curvePoints(clock, from, to, 80).map((p) => `${x(p.t).toFixed(1)},${y(p.share).toFixed(1)}`).join(' ');
  return s('svg', { class: 'curve', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'allowed share over time', 'data-testid': 'share-curve' },
    s('line', { x1: pad.l, y1: y(0), x2: W - pad.r, y2: y(0), class: 'axis' }),
    s('line', { x1: pad.l, y1: y(100), x2: W - pad.r, y2: y(100), class: 'grid' }),
    s('line', { x1: pad.l, y1: y(clock.target), x2: W - pad.r, y2: y(clock.target), class: 'target' }),
    s('text', { x: 4, y: y(100) + 4 }, '100%'),
    s('text', { x: 4, y: y(clock.target) + 4 }, `${clock.target}%`),
    s('text', { x: 4, y: y(0) + 4 }, '0%'),
    s('polyline', { points, class: 'share' }),
    s('line', { x1: x(now), y1: y(0), x2: x(now), y2: y(100), class: 'now' }),
    s('text', { x: pad.l, y: H - 6 }, fmtClock(from)),
    s('text', { x: W - pad.r, y: H - 6, 'text-anchor': 'end' }, fmtClock(to)),
    observed.map((o) => s('circle', { cx: x(o.t).toFixed(1), cy: y(o.instances ? (o.active * 100) / o.instances : 0).toFixed(1), r: 3, class: 'observed' },
      s('title', null, `${fmtClock(o.t)}: ${o.active} of ${o.instances} active`))));
}
