/** The health model (src/ops/health.ts): bounded checks, readiness vs liveness, shared runs. */
import t from 'tap';
import { describeFailures, Health, type CheckOutcome, type HealthCheck } from '../../src/ops/health.js';

const check = (name: string, run: () => Promise<CheckOutcome>, silenceIsFatal = false): HealthCheck => ({
  name,
  silence: `${name} did not answer`,
  silenceIsFatal,
  run,
});
const never = (): Promise<CheckOutcome> => new Promise(() => {});

t.test('a check that never answers fails with its reason instead of hanging the probe', async (t) => {
  const health = new Health([check('ok', async () => ({ ok: true })), check('frozen', never)], 20);
  const report = await health.probe();
  t.same(report, {
    ready: false,
    live: true,
    checks: { ok: { ok: true }, frozen: { ok: false, reason: 'frozen did not answer within 20 ms', fatal: false } },
  });
  t.equal(describeFailures(report), 'frozen: frozen did not answer within 20 ms');
});

t.test('silence of a check whose silence is fatal fails liveness too', async (t) => {
  const report = await new Health([check('thread', never, true)], 20).probe();
  t.match(report, { ready: false, live: false });
});

t.test('a check that throws is a non-fatal failure with the error message, not a crash', async (t) => {
  const report = await new Health([
    check('boom', async () => {
      throw new Error('disk on fire');
    }),
    check('odd', () => Promise.reject('not an Error')),
  ]).probe();
  t.same(report.checks, {
    boom: { ok: false, reason: 'disk on fire', fatal: false },
    odd: { ok: false, reason: 'not an Error', fatal: false },
  });
  t.equal(report.live, true);
});

t.test('only fatal failures fail liveness; describeFailures can name just those', async (t) => {
  const report = await new Health([
    check('worker', async () => ({ ok: false, reason: 'exited', fatal: true })),
    check('nats', async () => ({ ok: false, reason: 'reconnecting', fatal: false })),
  ]).probe();
  t.match(report, { ready: false, live: false });
  t.equal(describeFailures(report, true), 'worker: exited');
  t.equal(describeFailures(report), 'worker: exited; nats: reconnecting');
});

t.test('concurrent probes share one run of the checks (a flood of probes costs one)', async (t) => {
  let runs = 0;
  let release: () => void = () => {};
  const health = new Health([check('slow', () => new Promise((resolve) => ((runs += 1), (release = () => resolve({ ok: true })))))]);
  const probes = Array.from({ length: 100 }, () => health.probe());
  release();
  const reports = await Promise.all(probes);
  t.equal(runs, 1, 'one run');
  t.ok(reports.every((r) => r.ready));
  const next = health.probe();
  release();
  await next;
  t.equal(runs, 2, 'the next probe after it settled runs the checks again (no stale answer)');
});
