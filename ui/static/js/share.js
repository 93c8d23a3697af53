// The share curve of a staged phase, as the board computes it
// (models/rollout_stage.go): the share of instances allowed on the new
// definition grows linearly from the phase's prior share to its target at
// the safe rate, paused time left out:
//
//   share(t) = min(target, prior + percent × elapsed(t) / per_ms)
//   elapsed(t) = (min(t, paused_at if paused) − phase_started_at − paused) ≥ 0
//
// Worked example: prior 10, target 50, rate 5% per 60 000 ms, phase
// started at t = 0 ms.
//   1. t = 120 000: elapsed 120 000, share 10 + 5 × 2 = 20%.
//   2. Paused at 180 000 (share 25%): at t = 240 000 elapsed stays 180 000,
//      share 25%.
//   3. Resumed at 300 000, so paused 120 000 ms in all: at t = 360 000
//      elapsed = 360 000 − 120 000 = 240 000, share 10 + 5 × 4 = 30%.
//   4. The target, 50%, is reached at elapsed 480 000 (40 / 5 × 60 000),
//      t = 600 000; from there on the share stays 50%.
// Times here are milliseconds; the board's nanoseconds are converted by
// nanosToMs. The allowed count is ceil(instances × share / 100), at least
// 1 once the share is above 0 (share 12.5 of 16 instances: exactly 2).

// nanosToMs turns a protojson int64 of Unix nanoseconds (a string, or
// absent) into milliseconds: "1700000000123456789" → 1700000000123.
export function nanosToMs(value) {
  if (value === undefined || value === null || value === '') return 0;
  return Number(BigInt(value) / 1000000n);
}

// stageClock is the phase in milliseconds: {prior, target, percent,
// perMs, startedMs, paused, pausedAtMs, pausedMs}, from a RolloutStage.
export function stageClock(stage) {
  const rate = stage.safe_rate || {};
  return {
    prior: stage.prior_percent || 0,
    target: stage.target_percent || 0,
    percent: rate.percent || 0,
    perMs: Number(rate.per_ms || 0),
    startedMs: nanosToMs(stage.phase_started_at),
    paused: !!stage.paused,
    pausedAtMs: nanosToMs(stage.paused_at),
    pausedMs: nanosToMs(stage.paused_nanos),
  };
}

// shareAt is the share (percent) the phase allows at nowMs.
export function shareAt(clock, nowMs) {
  if (!(clock.percent > 0 && clock.perMs > 0)) return clock.target;
  let end = nowMs;
  if (clock.paused && clock.pausedAtMs < end) end = clock.pausedAtMs;
  const elapsed = Math.max(0, end - clock.startedMs - clock.pausedMs);
  return Math.min(clock.target, clock.prior + (clock.percent * elapsed) / clock.perMs);
}

// allowedInstances is ceil(instances × share / 100), 0 only at share 0;
// the small epsilon keeps 12.5% of 16 at 2 rather than 3.
export function allowedInstances(share, instances) {
  if (instances <= 0 || share <= 0) return 0;
  const n = Math.ceil((instances * share) / 100 - 1e-9);
  return Math.min(instances, Math.max(n, 1));
}

// curvePoints samples shareAt at count + 1 evenly spaced times from fromMs
// to toMs: [{t, share}].
export function curvePoints(clock, fromMs, toMs, count) {
  const points = [];
  for (let k = 0; k <= count; k++) {
    const t = fromMs + ((toMs - fromMs) * k) / count;
    points.push({ t, share: shareAt(clock, t) });
  }
  return points;
}

// targetReachedMs is when the share reaches the target while running
// unpaused from now on: the phase start plus the paused time plus
// (target − prior) / percent × per_ms. With prior 10, target 50, 5% per
// 60 000 ms, started at 0 and paused 120 000 ms: 0 + 120 000 + 480 000 =
// 600 000.
export function targetReachedMs(clock) {
  if (!(clock.percent > 0 && clock.perMs > 0)) return clock.startedMs;
  return clock.startedMs + clock.pausedMs + ((clock.target - clock.prior) / clock.percent) * clock.perMs;
}
