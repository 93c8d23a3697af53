// The dashboard in a real browser: Debian's Chromium, driven by
// playwright-core, against a running board (BOARD_URL) whose LRP "hello"
// (4 instances of fixtures/apps/hello on VERSION v1) runs on real reps.
// e2e/browser_e2e_test.go starts all that and runs this script; it exits
// non-zero on the first failed check. Before the browser, a few checks of
// the page's pure logic (the SSE parser, the line diff, the share curve).
//
// Screenshots of every page go to CORKBOARD_ARTIFACTS (a temp dir by
// default, printed).
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

import { createSSEParser, nextBackoff, followEvents } from '../static/js/sse.js';
import { lineDiff, prettyLines } from '../static/js/diff.js';
import { stageClock, shareAt, allowedInstances, targetReachedMs, nanosToMs } from '../static/js/share.js';
import { progressPercent, targetText } from '../static/js/rollout.js';
import { canPause, canResume, canPromote, canEdit, canAbort, canRollBack } from '../static/js/actions.js';

const boardURL = process.env.BOARD_URL;
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const guid = process.env.LRP_GUID || 'hello';
const artefacts = process.env.CORKBOARD_ARTIFACTS || mkdtempSync(join(tmpdir(), 'corkboard-dashboard-'));
mkdirSync(artefacts, { recursive: true });
if (!boardURL) {
  console.error('BOARD_URL is not set: run this through make test-browser');
  process.exit(2);
}

let passed = 0;
async function check(name, fn) {
  await fn();
  step(name);
}
function step(name) {
  passed++;
  console.log('ok -', name);
}

// ---- the page's pure logic ----

await check('the SSE parser reads events split anywhere, with CRLF, comments and no id', () => {
  const events = [];
  const push = createSSEParser((e) => events.push(e));
  const stream = ': heartbeat\n\nid: 7\nevent: rollout_changed\ndata: {"a":1}\n\nevent: events_lost\r\ndata: {}\r\n\r\nid: 8\nevent: x\ndata: one\ndata: two\n\n';
  for (let i = 0; i < stream.length; i += 5) push(stream.slice(i, i + 5));
  assert.deepEqual(events, [
    { id: '7', event: 'rollout_changed', data: '{"a":1}' },
    { id: '', event: 'events_lost', data: '{}' },
    { id: '8', event: 'x', data: 'one\ntwo' },
  ]);
});

await check('reconnects back off from 1 s to 10 s', () => {
  const seen = [];
  let ms = 0;
  for (let i = 0; i < 6; i++) seen.push((ms = nextBackoff(ms)));
  assert.deepEqual(seen, [1000, 2000, 4000, 8000, 10000, 10000]);
});

await check('a stream that ends is reopened with Last-Event-ID: the last id seen', async () => {
  const encoder = new TextEncoder();
  const stream = (text, close) => new Response(new ReadableStream({
    start(controller) {
      controller.enqueue(encoder.encode(text));
      if (close) controller.close();
    },
  }), { headers: { 'Content-Type': 'text/event-stream' } });
  const sent = [];
  const states = [];
  const seen = [];
  let reopened;
  const done = new Promise((resolve) => { reopened = resolve; });
  followEvents({
    onState: (state) => states.push(state),
    onEvent: (type) => seen.push(type),
    fetchFn: async (url, init) => {
      sent.push(init.headers['Last-Event-ID'] || '');
      if (sent.length === 1) return stream('id: 41\nevent: a\ndata: {}\n\nid: 42\nevent: b\ndata: {"x":1}\n\n', true);
      reopened();
      // The second stream stays open; the event without an id keeps 42.
      return stream('event: events_lost\ndata: {}\n\n', false);
    },
  });
  await done;
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(sent, ['', '42']);
  assert.deepEqual(seen, ['a', 'b', 'events_lost']);
  assert.deepEqual(states, ['connecting', 'live', 'reconnecting', 'live']);
});

await check('the line diff keeps the longest common lines', () => {
  assert.deepEqual(lineDiff(['x', 'y', 'z'], ['x', 'z', 'w']).map((l) => l.op + l.line), [' x', '-y', ' z', '+w']);
  assert.deepEqual(lineDiff([], ['a']).map((l) => l.op + l.line), ['+a']);
  assert.deepEqual(prettyLines({ b: 1, a: { d: 2, c: 3 } }), ['{', '  "a": {', '    "c": 3,', '    "d": 2', '  },', '  "b": 1', '}']);
});

await check('the share curve follows the worked example in share.js', () => {
  const ms = (n) => String(BigInt(n) * 1000000n);
  const stage = { prior_percent: 10, target_percent: 50, safe_rate: { percent: 5, per_ms: '60000' }, phase_started_at: ms(0) };
  assert.equal(shareAt(stageClock(stage), 120000), 20);
  const paused = { ...stage, paused: true, paused_at: ms(180000) };
  assert.equal(shareAt(stageClock(paused), 240000), 25);
  const resumed = { ...stage, paused_nanos: ms(120000) };
  assert.equal(shareAt(stageClock(resumed), 360000), 30);
  assert.equal(targetReachedMs(stageClock(resumed)), 600000);
  assert.equal(shareAt(stageClock(resumed), 900000), 50);
  assert.equal(allowedInstances(12.5, 16), 2);
  assert.equal(allowedInstances(0.1, 16), 1);
  assert.equal(allowedInstances(0, 16), 0);
  assert.equal(nanosToMs('1700000000123456789'), 1700000000123);
});

await check('the progress bar rounds down', () => {
  assert.equal(progressPercent({ state: 'PROGRESSING', instances: 6, updated_instances: 5 }), 83);
  assert.equal(progressPercent({ state: 'COMPLETE', instances: 6, updated_instances: 6 }), 100);
  assert.equal(progressPercent({}), 100);
  // Before any rollout: the running instances of the active definition.
  const first = { instances: 4, active_definition_id: 'v1', definitions: [{ definition_id: 'v1', instances: 4, running: 3 }] };
  assert.equal(progressPercent(first), 75);
});

await check('the actions follow the worked example in actions.js', () => {
  const stage = { target_percent: 50 };
  const holding = { state: 'HOLDING', stage };
  const defs = [{ definition_id: 'v2', active: true }, { definition_id: 'v1', healthy: true, became_healthy: true }];
  const lrp = { active_definition_id: 'v2', healthy_definition_id: 'v1' };
  const yes = (a) => assert.deepEqual(a, { ok: true, why: '' });
  yes(canPause(holding));
  assert.equal(canResume(holding).why, 'the staged phase is not paused');
  yes(canPromote(holding));
  yes(canEdit(holding));
  yes(canAbort(lrp));
  yes(canRollBack(defs));
  const complete = { state: 'COMPLETE', stage, finished_at: '1' };
  const done = { active_definition_id: 'v2', healthy_definition_id: 'v2' };
  for (const answer of [canPause(complete), canResume(complete), canPromote(complete), canEdit(complete), canAbort(done)]) assert.equal(answer.ok, false);
  assert.match(canAbort(done).why, /no rollout to abort/);
  yes(canRollBack(defs));
  // The rest of the Go rules: a paused phase resumes, HELD resumes, a
  // reverting rollout is edited, a first definition has nothing to go back to.
  yes(canResume({ state: 'PROGRESSING', stage: { paused: true } }));
  assert.equal(canPause({ state: 'PROGRESSING', stage: { paused: true } }).why, 'the staged phase is paused already');
  yes(canResume({ state: 'HELD' }));
  assert.match(canPause({ state: 'PROGRESSING' }).why, /not staged/);
  yes(canEdit({ state: 'REVERTED', finished_at: '0' }));
  assert.equal(canEdit({ state: 'NONE' }).ok, false);
  assert.equal(canRollBack([{ definition_id: 'v1', active: true, became_healthy: true }]).ok, false);
});

await check('a staged phase past its target time says it reached it, never "in 0s"', () => {
  const at = 1700000000000;
  const stage = { target_at: String(BigInt(at) * 1000000n) };
  assert.match(targetText(stage, at - 25000), /^ · target at .* \(in 25s\)$/);
  assert.match(targetText(stage, at + 1), /^ · target reached at /);
  assert.equal(targetText({}, at), '');
});

// ---- the dashboard in Chromium ----

const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
const problems = [];
// restarting: the board is being restarted, on the script's request.
let restarting = false;

// openPage opens a page in a context of its own (with options such as a
// client certificate) that records every script error, console error (a
// CSP refusal shows as one) and failed request, for the end.
async function openPage(contextOptions = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, ...contextOptions });
  const page = await context.newPage();
  page.setDefaultTimeout(60000);
  page.on('pageerror', (err) => problems.push('page error: ' + err.message));
  page.on('console', (msg) => {
    // A failed request shows as a console error without its address; the
    // response listener below judges those.
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) problems.push('console error: ' + msg.text());
  });
  page.on('response', (response) => {
    // A board shutting down may refuse a new stream (503) while the page
    // reconnects; that is what the restart step expects.
    if (restarting && response.url().endsWith('/v1/events')) return;
    if (response.status() >= 400) problems.push(`HTTP ${response.status()} for ${response.url()}`);
  });
  return page;
}

function screenshots(page, prefix = '') {
  return async (name) => {
    const path = join(artefacts, prefix + name);
    await page.screenshot({ path, fullPage: true });
    console.log('screenshot', path);
  };
}

// rollout: the LRPs page, hello's page through two updates started from
// it, and the cells page, on a board without TLS.
async function rollout() {
  const page = await openPage();
  const shot = screenshots(page);

  await page.goto(boardURL + '/ui/');
  await page.locator('[data-testid=connection][data-state=live]').waitFor();
  const row = page.locator(`[data-testid=lrps] tr[data-guid="${guid}"]`);
  await row.waitFor();
  await page.locator(`[data-testid=lrps] tr[data-guid="${guid}"] .badge.running`, { hasText: /^RUNNING 4$/ }).waitFor();
  step('the LRPs page lists hello, live');
  await shot('lrps.png');

  // Freeze windows: one coming in an hour shows in the banner as coming,
  // one active now as the freeze with its end; removed, the banner goes.
  const freezeCall = async (route, body) => {
    const resp = await fetch(boardURL + route, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    const answer = await resp.json();
    assert.ok(resp.ok && !answer.error, `${route}: ${resp.status} ${JSON.stringify(answer)}`);
  };
  const inMinutes = (m) => new Date(Date.now() + m * 60000).toISOString().replace(/\.\d+Z$/, 'Z');
  const banner = page.locator('[data-testid=freeze-banner]');
  await freezeCall('/v1/freeze_windows/add', { window: { name: 'browser-coming', from: inMinutes(60), until: inMinutes(120) } });
  await page.locator('[data-testid=freeze-upcoming]', { hasText: 'browser-coming' }).waitFor();
  assert.equal(await page.locator('[data-testid=freeze-active]').count(), 0, 'no freeze is active yet');
  await freezeCall('/v1/freeze_windows/add', { window: { name: 'browser-now', from: inMinutes(-1), until: inMinutes(10) } });
  const active = page.locator('[data-testid=freeze-active]', { hasText: 'browser-now' });
  await active.waitFor();
  assert.match(await active.innerText(), /Frozen by browser-now until .+: no rollout starts or progresses except reverts and overrides\./);
  await shot('freeze.png');
  await freezeCall('/v1/freeze_windows/remove', { name: 'browser-now' });
  await freezeCall('/v1/freeze_windows/remove', { name: 'browser-coming' });
  await banner.waitFor({ state: 'hidden' });
  step('the freeze banner shows the active window until its end and the one coming, live, and goes once they are removed');

  // Loading states: with the instance list held back, the LRP page says
  // it is loading, never that there are none; the actions wait too.
  const slow = await openPage();
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await slow.route('**/v1/actual_lrps/list', async (route) => { await held; await route.continue(); });
  // The LRPs page, its list held back too: "Loading…", not "No LRPs".
  await slow.goto(boardURL + '/ui/');
  await slow.locator('[data-testid=lrps-page] > p', { hasText: /^Loading…$/ }).waitFor();
  await slow.locator('[data-testid=connection][data-state=live]').waitFor();
  await slow.waitForTimeout(300); // the first events have come and gone
  assert.equal(await slow.locator('[data-testid=lrps-page]', { hasText: 'No LRPs' }).count(), 0, 'no "No LRPs" before the list');
  await slow.goto(boardURL + '/ui/#/lrps/' + encodeURIComponent(guid));
  await slow.locator('[data-testid=instances] [data-testid=loading]', { hasText: 'Loading instances…' }).waitFor();
  assert.equal(await slow.locator('[data-testid=instances]', { hasText: 'No instances.' }).count(), 0, 'no "No instances." before the data');
  await screenshots(slow)('lrp-loading.png');
  release();
  await slow.waitForFunction(() => document.querySelectorAll('[data-testid=instances] tbody tr[data-state=RUNNING]').length === 4);
  await slow.close();
  step('the LRPs and LRP pages say they are loading until their data arrives, not "No LRPs" or "No instances."');

  // A board that does not answer: the page says why that may be (a
  // client certificate under mutual TLS among them), and hides it again
  // once the board answers.
  const cut = await openPage();
  await cut.route('**/v1/**', (route) => route.abort('connectionrefused'));
  await cut.goto(boardURL + '/ui/');
  const unreachable = cut.locator('[data-testid=unreachable]');
  await unreachable.waitFor();
  assert.match(await unreachable.innerText(), /client certificate/);
  await screenshots(cut)('unreachable.png');
  await cut.unroute('**/v1/**');
  await cut.reload();
  await cut.locator(`[data-testid=lrps] tr[data-guid="${guid}"]`).waitFor();
  await unreachable.waitFor({ state: 'hidden' });
  await cut.close();
  step('a board that does not answer gets an explanation naming the client certificate, gone once it answers');

  await row.locator('a').click();
  await page.locator('[data-testid=lrp-page]').waitFor();
  const instanceRows = page.locator('[data-testid=instances] tbody tr[data-definition]');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=instances] tbody tr[data-state=RUNNING]').length === 4);
  const before = await instanceRows.evaluateAll((rows) => [...new Set(rows.map((r) => r.dataset.definition))]);
  assert.equal(before.length, 1, 'hello runs one definition before the update: ' + before);
  await page.locator('[data-testid=rollout-progress][data-percent="100"]').waitFor();
  assert.deepEqual(await page.locator('[data-testid=progress-legend] li').evaluateAll((items) => items.map((i) => i.dataset.legend)), ['updated', 'inflight']);
  step('the LRP page shows 4 instances on one definition, at 100%, the bar with its legend');

  // Each instance's signals over the board's window (instance_signals of
  // GET rollout status): none crashed or restarted, and each has a memory
  // sample from its cell's health reports.
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('[data-testid=instances] tbody tr[data-state=RUNNING]')];
    return rows.length === 4 && rows.every((r) => r.dataset.windowCrashes === '0' && r.dataset.restarts === '0' && Number(r.dataset.memory) > 0);
  });
  const memoryCells = await page.locator('[data-testid=instances] tbody tr[data-state=RUNNING]').evaluateAll((rows) =>
    rows.map((r) => r.children[14].textContent));
  for (const text of memoryCells) assert.match(text, /^\d+ MB$/, 'the memory p99 column: ' + JSON.stringify(memoryCells));
  step('the instance table shows each instance\'s window signals: 0 crashes, 0 restarts, memory p99 ' + memoryCells.join(', '));

  // enabled is each action's enabled state and tooltip.
  const enabled = async () => Object.fromEntries(await page.locator('.actions button[data-action]').evaluateAll((bs) =>
    bs.map((b) => [b.dataset.action, b.disabled ? 'off: ' + b.title : 'on'])));
  // With no rollout and one definition, no action would be accepted, and
  // each says why.
  await page.waitForFunction(() => document.querySelector('.actions button[data-action=pause]')?.title.includes('no rollout'));
  const idle = await enabled();
  assert.deepEqual(Object.keys(idle).sort(), ['abort', 'edit', 'pause', 'promote', 'resume', 'rollback']);
  for (const [action, state] of Object.entries(idle)) assert.match(state, /^off: \S/, `${action} is disabled with a reason: ${JSON.stringify(idle)}`);
  step('before any rollout every action is disabled, its tooltip saying why: ' + JSON.stringify(idle));

  // update changes VERSION from `from` to `to` in the update form's
  // definition, fills the other fields given (by name), reviews the plan
  // and confirms.
  const dialog = page.locator('[data-testid=dialog]');
  const update = async (from, to, fields, planShot) => {
    await page.locator('[data-testid=update-form] summary').click();
    const textarea = page.locator('[data-testid=update-definition]');
    await page.waitForFunction((v) => document.querySelector('[data-testid=update-definition]').value.includes(`"${v}"`), from);
    const definition = JSON.parse(await textarea.inputValue());
    const env = definition.action.env.find((e) => e.name === 'VERSION');
    assert.equal(env.value, from);
    env.value = to;
    await textarea.fill(JSON.stringify(definition, null, 2));
    for (const [name, value] of Object.entries(fields)) await page.locator(`[data-testid=update-${name}]`).fill(value);
    await page.locator('[data-testid=update-review]').click();
    await dialog.waitFor();
    await page.locator('[data-testid=plan-passes], [data-testid=plan-unavailable]').first().waitFor();
    const planText = await page.locator('[data-testid=plan]').innerText();
    console.log('plan:', planText.replace(/\s+/g, ' ').slice(0, 300));
    assert.ok(await page.locator('[data-testid=plan-passes] tbody tr').count() > 0, 'the plan has passes: ' + planText);
    assert.match(planText, new RegExp(`#\\d+ on cell-z`), 'the plan places new instances');
    if (planShot) await shot(planShot);
    await page.locator('[data-testid=dialog-confirm]').click();
    await dialog.waitFor({ state: 'hidden' });
  };
  // confirm clicks an action's button and confirms its dialog.
  const confirm = async (action) => {
    await page.locator(`[data-action=${action}]`).click();
    await dialog.waitFor();
    await page.locator('[data-testid=dialog-confirm]').click();
    await dialog.waitFor({ state: 'hidden' });
  };

  // The update: VERSION v1 → v2 in the definition's JSON.
  await update('v1', 'v2', {}, 'lrp-update-plan.png');
  step('the update form showed the plan pass by pass, and was confirmed');

  // Mid-rollout: at least one instance moved, not all.
  const progress = page.locator('[data-testid=rollout-progress]');
  await page.waitForFunction(() => {
    const p = Number(document.querySelector('[data-testid=rollout-progress]').dataset.percent);
    return p > 0 && p < 100;
  });
  await shot('lrp-mid-rollout.png');
  step(`the progress bar moves mid-rollout (${await progress.getAttribute('data-percent')}%)`);

  await page.locator('[data-testid=rollout-progress][data-percent="100"][aria-valuenow="100"]').waitFor({ timeout: 90000 });
  await page.locator('.rollout .badge.complete').waitFor();
  // Every instance on the new definition: the old ones retire and leave.
  await page.waitForFunction((old) => {
    const rows = [...document.querySelectorAll('[data-testid=instances] tbody tr[data-definition]')];
    return rows.length === 4 && rows.every((r) => r.dataset.definition !== old && r.dataset.state === 'RUNNING' && r.dataset.presence === 'ORDINARY');
  }, before[0], { timeout: 60000 });
  const after = await instanceRows.evaluateAll((rows) => [...new Set(rows.map((r) => r.dataset.definition))]);
  assert.equal(after.length, 1);
  assert.notEqual(after[0], before[0]);
  step('the progress bar reaches 100% and the instance table shows only the new definition');

  const finished = page.locator('[data-testid=operations] > li[data-status=FINISHED][data-kind^=UPDATE]');
  await finished.first().waitFor();
  const history = await finished.first().innerText();
  assert.match(history, /FINISHED/);
  step('the operations timeline shows the update FINISHED');

  // The board restarts (the Go side does it when asked on stdout): the
  // page says so, and its new stream resumes after the last event it saw
  // (Last-Event-ID; ids come from the event log in the database, so they
  // survive the restart).
  const streams = [];
  page.on('request', (request) => {
    if (request.url().endsWith('/v1/events')) streams.push(request.headers()['last-event-id'] || '');
  });
  restarting = true;
  console.log('RESTART THE BOARD');
  await page.locator('[data-testid=connection][data-state=reconnecting]').waitFor();
  await page.locator('[data-testid=connection][data-state=live]').waitFor();
  restarting = false;
  const resumedFrom = streams[streams.length - 1];
  assert.ok(/^\d+$/.test(resumedFrom || ''), 'the stream resumed with Last-Event-ID: ' + JSON.stringify(streams));
  step(`after the board restarted, the stream resumed with Last-Event-ID ${resumedFrom}`);

  // The diff of the two definitions names the changed variable.
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=definitions] tbody tr').length === 2);
  await page.locator('[data-testid=definition-diff] .add', { hasText: '"v2"' }).waitFor();
  await page.locator('[data-testid=definition-diff] .del', { hasText: '"v1"' }).waitFor();
  step('the definitions diff shows v1 → v2');
  await shot('lrp-done.png');

  // A staged update to v3: half the instances, growing 50% per 20 s. It
  // is paused, resumed and promoted to 100% from the page.
  // 4 instances: 2 allowed from 25% on, so reaching 50% moves nothing;
  // the phase HOLDs then all the same.
  await update('v2', 'v3', { staged_target: '50', staged_rate: '50', staged_per_ms: '6000' });
  await page.locator('[data-testid=share-curve]').waitFor();
  const legend = await page.locator('[data-testid=share-legend] li').evaluateAll((items) => items.map((i) => i.dataset.legend));
  assert.deepEqual(legend, ['share', 'target', 'now', 'observed']);
  await page.waitForFunction(() => ['pause', 'abort'].every((a) => !document.querySelector(`.actions button[data-action=${a}]`).disabled));
  let now = await enabled();
  assert.equal(now.pause, 'on');
  assert.equal(now.resume, 'off: the staged phase is not paused');
  assert.equal(now.abort, 'on');
  step('a staged update shows its share curve with a legend; pause, promote and abort are enabled, resume is not');
  await confirm('pause');
  await page.locator('.stage .badge', { hasText: 'paused' }).waitFor();
  await page.waitForFunction(() => !document.querySelector('.actions button[data-action=resume]').disabled);
  now = await enabled();
  assert.equal(now.pause, 'off: the staged phase is paused already');
  await shot('lrp-staged-paused.png');
  step('paused from the page: resume is enabled and pause is not');
  await confirm('resume');
  await page.locator('.stage .badge', { hasText: 'paused' }).waitFor({ state: 'detached' });
  await page.locator('.rollout .badge.holding').waitFor({ timeout: 30000 });
  const stageText = await page.locator('.rollout .stage').innerText();
  assert.doesNotMatch(stageText, /in 0s/, 'a HOLDING phase counts down to nothing: ' + stageText);
  await shot('lrp-staged-holding.png');
  step('at its target the staged phase shows HOLDING: ' + stageText.split('\n')[0]);
  await page.locator('[data-testid=edit-surge]').fill('100%');
  await confirm('edit');
  await page.locator('dd', { hasText: 'surge 100%,' }).waitFor();
  step('the rollout under way is edited to max surge 100% from the page');
  await page.locator('[data-testid=promote-to]').fill('100');
  await confirm('promote');
  await page.locator('.rollout .badge.complete').waitFor({ timeout: 90000 });
  await page.locator('[data-testid=rollout-progress][data-percent="100"]').waitFor();
  for (const kind of ['PAUSE', 'RESUME', 'EDIT', 'PROMOTE']) {
    await page.locator(`[data-testid=operations] > li[data-kind=${kind}][data-status=FINISHED]`).waitFor();
  }
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('[data-testid=instances] tbody tr[data-definition]')];
    return rows.length === 4 && new Set(rows.map((r) => r.dataset.definition)).size === 1 && rows.every((r) => r.dataset.presence === 'ORDINARY');
  });
  step('resumed and promoted to 100% from the page, the staged rollout completes');
  const v3 = await instanceRows.first().getAttribute('data-definition');

  // An update to v4, canceled from the timeline once under way: the
  // rollout is aborted and every instance is back on v3.
  await update('v3', 'v4', {});
  const running = page.locator('[data-testid=operations] > li[data-kind=UPDATE_DEFINITION][data-status=IN_PROGRESS]');
  await running.waitFor();
  await running.locator('[data-action=cancel-operation]').click();
  await dialog.waitFor();
  await page.locator('[data-testid=dialog-confirm]').click();
  await dialog.waitFor({ state: 'hidden' });
  await page.locator('[data-testid=operations] > li[data-kind=UPDATE_DEFINITION][data-status=CANCELED]').waitFor();
  // The cancel started an abort: a rollout back to v3, over when the
  // abort is FINISHED and the rollout COMPLETE.
  await page.locator('[data-testid=operations] > li[data-kind=ABORT][data-status=FINISHED]').waitFor({ timeout: 60000 });
  await page.locator('.rollout .badge.complete').waitFor();
  await page.waitForFunction((id) => {
    const rows = [...document.querySelectorAll('[data-testid=instances] tbody tr[data-definition]')];
    return rows.length === 4 && rows.every((r) => r.dataset.definition === id && r.dataset.presence === 'ORDINARY' && r.dataset.state === 'RUNNING');
  }, v3, { timeout: 60000 });
  await shot('lrp-canceled.png');
  step('an update canceled from the timeline rolls back to v3');

  // An update to v5 judged by its analysis (the board's own crash
  // signal) with a short bake, sent through the API: the verdict panel
  // shows the policy and the verdicts as they come.
  const call = async (route, body) => {
    const resp = await fetch(boardURL + route, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    const answer = await resp.json();
    assert.ok(resp.ok && !answer.error, `${route}: ${resp.status} ${JSON.stringify(answer)}`);
    return answer;
  };
  const current = (await call('/v1/desired_lrps/get', { process_guid: guid })).desired_lrp;
  const v5 = JSON.parse(JSON.stringify(current.definition).replaceAll('"v3"', '"v5"').replaceAll('"v4"', '"v5"'));
  delete v5.definition_id;
  await call('/v1/desired_lrps/update', {
    process_guid: guid,
    update: {
      definition: v5, update_identifier: 'v5',
      analysis: { interval_ms: '1000', checks: [{ name: 'crashes', provider: 'board', signal: 'crash_rate', max: 1 }] },
      on_failure: 'hold', bake_ms: '4000',
    },
  });
  const verdicts = page.locator('[data-testid=rollout-verdicts]');
  await verdicts.locator('[data-testid=verdict-policy]', { hasText: '1 check every 1s · on failure: hold · on marginal: continue · bake 4s' }).waitFor();
  await verdicts.locator('[data-testid=verdict] .badge.pass').first().waitFor({ timeout: 30000 });
  await page.locator('.rollout .badge.complete').waitFor({ timeout: 90000 });
  assert.ok(await verdicts.locator('[data-testid=verdict] .badge.fail').count() === 0, 'no verdict failed');
  await shot('lrp-verdicts.png');
  step('a rollout judged by its analysis shows its policy and PASS verdicts in the verdict panel, and completes after its bake');

  // Paging: the timeline shows the newest 20 operations; "Older
  // operations…" loads the rest. Annotation updates make enough.
  for (let i = 0; i < 14; i++) await call('/v1/desired_lrps/update', { process_guid: guid, update: { annotation: `page ${i}` } });
  const total = ((await call('/v1/operations/list', { process_guid: guid })).operations || []).length;
  assert.ok(total > 20 && total <= 40, `${total} operations`);
  const timeline = page.locator('[data-testid=operations] > li[data-id]');
  await page.locator('[data-testid=operations] > li[data-id]', { hasText: 'UPDATE' }).first().waitFor();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=operations] > li[data-id]').length === 20);
  const older = page.locator('[data-action=older-operations]');
  await older.click();
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid=operations] > li[data-id]').length === n, total);
  await older.waitFor({ state: 'hidden' });
  assert.equal(await timeline.count(), total);
  step(`the operations timeline shows the newest 20 of ${total}; "Older operations…" loads the rest`);

  // The facts say the LRP's disruption budget and its budget group.
  await page.locator('dd', { hasText: "the strategy's max_unavailable" }).waitFor();
  await call('/v1/desired_lrps/update', { process_guid: guid, update: { disruption_budget: { max_unavailable: '1', group: 'checkout' } } });
  await page.locator('dd', { hasText: '1 · group checkout' }).waitFor();
  step('the LRP page shows its disruption budget and budget group as they change');

  await page.locator('nav a[data-nav=cells]').click();
  await page.locator('[data-testid=cells] [data-cell]').first().waitFor();
  const cells = await page.locator('[data-testid=cells] [data-cell]').evaluateAll((els) => els.map((e) => e.dataset.cell));
  assert.ok(cells.length >= 1, 'the cells page lists the cells');
  await shot('cells.png');
  step(`the cells page lists ${cells.join(', ')}`);

  // Quarantine: cell-z2 quarantined through the API shows its badge and
  // reason, live; cleared from the page, both go.
  const z2 = page.locator('[data-testid=cells] [data-cell=cell-z2]');
  await freezeCall('/v1/cells/quarantine', { cell_id: 'cell-z2', reason: 'browser test: disk errors' });
  await z2.locator('[data-testid=cell-quarantined]').waitFor();
  assert.match(await z2.locator('[data-testid=cell-quarantine-reason]').innerText(), /^Quarantined .+ by .+: browser test: disk errors\./);
  await shot('cells-quarantined.png');
  await z2.locator('[data-action=clear-quarantine]').click();
  await dialog.waitFor();
  await page.locator('[data-testid=dialog-confirm]').click();
  await dialog.waitFor({ state: 'hidden' });
  await z2.locator('[data-testid=cell-quarantined]').waitFor({ state: 'hidden' });
  assert.equal(await z2.locator('[data-action=clear-quarantine]').count(), 0, 'no clear button once cleared');
  step('a quarantined cell shows its badge and reason, live, and is cleared from the page');

  // Draining cell-z1 from the page: its instances move to cell-z2, and
  // its card says so as it happens.
  const z1 = page.locator('[data-testid=cells] [data-cell=cell-z1]');
  await z1.locator('[data-action=drain]').click();
  await dialog.waitFor();
  await page.locator('[data-testid=dialog-confirm]').click();
  await dialog.waitFor({ state: 'hidden' });
  await z1.locator('.badge', { hasText: 'draining' }).waitFor();
  await z1.locator('.capacity', { hasText: 'instances' }).locator('.figure', { hasText: /^0 \/ 16$/ }).waitFor();
  await z1.locator('[data-testid=drain-status]', { hasText: /Draining since .+ · deadline none \(waits for the budgets\) · 0 waiting, 0 evacuating/ }).waitFor();
  await shot('cells-drained.png');
  step('cell-z1 drained from the page: draining, its drain status, and its instances gone, live');

}

// tls: a board with mutual TLS. The browser presents the operator's
// certificate (CLIENT_CERT, CLIENT_KEY) and sees everything; with an
// api-client certificate (API_CLIENT_CERT, API_CLIENT_KEY) it sees the
// LRPs but not the cells (no zones, and the cells page says why); with no
// certificate it gets no page at all. The board's certificate is of the
// test's own CA, which the browser is told to accept.
async function tls() {
  const origin = new URL(boardURL).origin;
  const as = (cert, key) => ({ ignoreHTTPSErrors: true, clientCertificates: [{ origin, certPath: cert, keyPath: key }] });

  const operator = await openPage(as(process.env.CLIENT_CERT, process.env.CLIENT_KEY));
  await operator.goto(boardURL + '/ui/#/lrps/' + encodeURIComponent(guid));
  await operator.locator('[data-testid=connection][data-state=live]').waitFor();
  await operator.waitForFunction(() => document.querySelectorAll('[data-testid=instances] tbody tr[data-state=RUNNING]').length > 0);
  await operator.locator('[data-testid=instances] tr.group', { hasText: /zone z\d/ }).first().waitFor();
  await screenshots(operator, 'tls-')('lrp-operator.png');
  await operator.locator('nav a[data-nav=cells]').click();
  await operator.locator('[data-testid=cells] [data-cell]').first().waitFor();
  step('over mutual TLS, an operator certificate sees the LRP with its zones, live, and the cells');

  const client = await openPage(as(process.env.API_CLIENT_CERT, process.env.API_CLIENT_KEY));
  await client.goto(boardURL + '/ui/#/lrps/' + encodeURIComponent(guid));
  await client.locator('[data-testid=connection][data-state=live]').waitFor();
  await client.waitForFunction(() => document.querySelectorAll('[data-testid=instances] tbody tr[data-state=RUNNING]').length > 0);
  await client.locator('[data-testid=instances] tr.group', { hasText: 'zone —' }).first().waitFor();
  await client.locator('nav a[data-nav=cells]').click();
  await client.locator('[data-testid=cells-page] .error', { hasText: 'Only an operator certificate may list cells' }).waitFor();
  await screenshots(client, 'tls-')('cells-api-client.png');
  step('an api-client certificate sees the LRP without zones, and is told the cells are for operators');

  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const anonymous = await context.newPage();
  await assert.rejects(anonymous.goto(boardURL + '/ui/', { timeout: 15000 }), 'no page without a client certificate');
  step('without a certificate the browser gets no page (the board ends the TLS handshake)');

  // Asked in plain HTTP, the board's TLS port answers with a page saying
  // where the dashboard is and which certificate it needs.
  const plainURL = boardURL.replace(/^https:/, 'http:') + '/ui/';
  const plain = await context.newPage();
  const answer = await plain.goto(plainURL);
  assert.equal(answer.status(), 400);
  const text = await plain.locator('body').innerText();
  assert.match(text, /client certificate/);
  assert.equal(await plain.locator('a').getAttribute('href'), origin + '/ui/');
  await screenshots(plain, 'tls-')('plain-http.png');
  step('asked in plain HTTP, the TLS port answers with a page linking the https dashboard and naming the certificate');
}

try {
  if (process.env.MODE === 'tls') await tls();
  else await rollout();
  assert.deepEqual(problems, [], 'the page logged no error');
  step('no script or console error');
} catch (err) {
  const page = browser.contexts()[0]?.pages()[0];
  if (page) {
    await page.screenshot({ path: join(artefacts, 'failure.png'), fullPage: true }).catch(() => {});
    console.error('failure screenshot:', join(artefacts, 'failure.png'));
  }
  if (problems.length) console.error('page problems:', problems);
  throw err;
} finally {
  await browser.close();
}
console.log('artefacts in', artefacts);
console.log(`${passed} passed, 0 failed`);
process.exit(0);
