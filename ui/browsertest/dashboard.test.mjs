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

import { createSSEParser, nextBackoff } from '../static/js/sse.js';
import { lineDiff, prettyLines } from '../static/js/diff.js';
import { stageClock, shareAt, allowedInstances, targetReachedMs, nanosToMs } from '../static/js/share.js';
import { progressPercent } from '../static/js/rollout.js';

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
function check(name, fn) {
  fn();
  passed++;
  console.log('ok -', name);
}

// ---- the page's pure logic ----

check('the SSE parser reads events split anywhere, with CRLF, comments and no id', () => {
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

check('reconnects back off from 1 s to 10 s', () => {
  const seen = [];
  let ms = 0;
  for (let i = 0; i < 6; i++) seen.push((ms = nextBackoff(ms)));
  assert.deepEqual(seen, [1000, 2000, 4000, 8000, 10000, 10000]);
});

check('the line diff keeps the longest common lines', () => {
  assert.deepEqual(lineDiff(['x', 'y', 'z'], ['x', 'z', 'w']).map((l) => l.op + l.line), [' x', '-y', ' z', '+w']);
  assert.deepEqual(lineDiff([], ['a']).map((l) => l.op + l.line), ['+a']);
  assert.deepEqual(prettyLines({ b: 1, a: { d: 2, c: 3 } }), ['{', '  "a": {', '    "c": 3,', '    "d": 2', '  },', '  "b": 1', '}']);
});

check('the share curve follows the worked example in share.js', () => {
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

check('the progress bar rounds down', () => {
  assert.equal(progressPercent({ state: 'PROGRESSING', instances: 6, updated_instances: 5 }), 83);
  assert.equal(progressPercent({ state: 'COMPLETE', instances: 6, updated_instances: 6 }), 100);
  assert.equal(progressPercent({}), 100);
  // Before any rollout: the running instances of the active definition.
  const first = { instances: 4, active_definition_id: 'v1', definitions: [{ definition_id: 'v1', instances: 4, running: 3 }] };
  assert.equal(progressPercent(first), 75);
});

// ---- the dashboard in Chromium ----

const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
const problems = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  page.setDefaultTimeout(60000);
  // Any script error or console error (a CSP refusal shows as one) fails
  // the test at the end.
  page.on('pageerror', (err) => problems.push('page error: ' + err.message));
  page.on('console', (msg) => {
    // A failed request shows as a console error without its address; the
    // response listener below judges those.
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) problems.push('console error: ' + msg.text());
  });
  page.on('response', (response) => {
    // POST /v1/rollouts/plan answers 404 on a board built before that
    // route: the page says "plan unavailable" and goes on.
    if (response.status() >= 400 && !response.url().endsWith('/v1/rollouts/plan')) problems.push(`HTTP ${response.status()} for ${response.url()}`);
  });
  const shot = async (name) => {
    const path = join(artefacts, name);
    await page.screenshot({ path, fullPage: true });
    console.log('screenshot', path);
  };

  await page.goto(boardURL + '/ui/');
  await page.locator('[data-testid=connection][data-state=live]').waitFor();
  const row = page.locator(`[data-testid=lrps] tr[data-guid="${guid}"]`);
  await row.waitFor();
  await page.locator(`[data-testid=lrps] tr[data-guid="${guid}"] .badge.running`, { hasText: /^RUNNING 4$/ }).waitFor();
  check('the LRPs page lists hello, live', () => {});
  await shot('lrps.png');

  await row.locator('a').click();
  await page.locator('[data-testid=lrp-page]').waitFor();
  const instanceRows = page.locator('[data-testid=instances] tbody tr[data-definition]');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=instances] tbody tr[data-state=RUNNING]').length === 4);
  const before = await instanceRows.evaluateAll((rows) => [...new Set(rows.map((r) => r.dataset.definition))]);
  assert.equal(before.length, 1, 'hello runs one definition before the update: ' + before);
  await page.locator('[data-testid=rollout-progress][data-percent="100"]').waitFor();
  check('the LRP page shows 4 instances on one definition, at 100%', () => {});

  // The update: VERSION v1 → v2 in the definition's JSON.
  await page.locator('[data-testid=update-form] summary').click();
  const textarea = page.locator('[data-testid=update-definition]');
  await page.waitForFunction(() => document.querySelector('[data-testid=update-definition]').value.includes('VERSION'));
  const definition = JSON.parse(await textarea.inputValue());
  const env = definition.action.env.find((e) => e.name === 'VERSION');
  assert.equal(env.value, 'v1');
  env.value = 'v2';
  await textarea.fill(JSON.stringify(definition, null, 2));
  await page.locator('[data-testid=update-review]').click();
  const dialog = page.locator('[data-testid=dialog]');
  await dialog.waitFor();
  await page.locator('[data-testid=plan-passes], [data-testid=plan-unavailable]').first().waitFor();
  const planText = await page.locator('[data-testid=plan]').innerText();
  console.log('plan:', planText.replace(/\s+/g, ' ').slice(0, 300));
  await shot('lrp-update-plan.png');
  await page.locator('[data-testid=dialog-confirm]').click();
  await dialog.waitFor({ state: 'hidden' });
  check('the update form showed the plan (or why not) and was confirmed', () => {});

  // Mid-rollout: at least one instance moved, not all.
  const progress = page.locator('[data-testid=rollout-progress]');
  await page.waitForFunction(() => {
    const p = Number(document.querySelector('[data-testid=rollout-progress]').dataset.percent);
    return p > 0 && p < 100;
  });
  await shot('lrp-mid-rollout.png');
  check(`the progress bar moves mid-rollout (${await progress.getAttribute('data-percent')}%)`, () => {});

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
  check('the progress bar reaches 100% and the instance table shows only the new definition', () => {});

  const finished = page.locator('[data-testid=operations] > li[data-status=FINISHED][data-kind^=UPDATE]');
  await finished.first().waitFor();
  const history = await finished.first().innerText();
  assert.match(history, /FINISHED/);
  check('the operations timeline shows the update FINISHED', () => {});

  // The diff of the two definitions names the changed variable.
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=definitions] tbody tr').length === 2);
  await page.locator('[data-testid=definition-diff] .add', { hasText: '"v2"' }).waitFor();
  await page.locator('[data-testid=definition-diff] .del', { hasText: '"v1"' }).waitFor();
  check('the definitions diff shows v1 → v2', () => {});
  await shot('lrp-done.png');

  await page.locator('nav a[data-nav=cells]').click();
  await page.locator('[data-testid=cells] [data-cell]').first().waitFor();
  const cells = await page.locator('[data-testid=cells] [data-cell]').evaluateAll((els) => els.map((e) => e.dataset.cell));
  assert.ok(cells.length >= 1, 'the cells page lists the cells');
  await shot('cells.png');
  check(`the cells page lists ${cells.join(', ')}`, () => {});

  assert.deepEqual(problems, [], 'the page logged no error');
  check('no script or console error', () => {});
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
