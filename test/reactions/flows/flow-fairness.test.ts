/**
 * Issue 37, finding 5: one org's flows must not starve another org's. Org A runs 60 live one-second
 * flows (every other one with a wait step), collects events all the time (each run has trigger rows), and
 * sends to a receiver that answers after 2 s (its sends pile up in the dispatcher). Org B has one flow, run
 * in real time and due each second besides, sending to a fast receiver. B's latency, from its event
 * acknowledged to the webhook received, is measured idle (before A has flows) and again under A's load, in
 * the same test, so the machine's speed cancels out: the bound is B's own idle p95 (COMPARED), times
 * FACTOR, times what the rest of the machine took of the cores more under load than idle (share), plus
 * SLACK_MS.
 * The gaps between B's runs (lastRunAt) are held to the same rule (p95), and none may reach DEADLINE_MS.
 *
 * On the real service's layout (a storage process), real DuckDB files and real HTTP receivers. Before the
 * per-org turns, B's runs waited behind every due run of A (60 in a row): B's first event under load was
 * not delivered within 10 s (DEADLINE_MS), and B's flow did not run for as long.
 */
import { availableParallelism } from 'node:os';
import { listValue } from '@duckdb/node-api';
import t from 'tap';
import { customEvent, STORAGE_PROCESS, startTestApp, waitFor } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, startFlow } from '../../helpers/flows.js';
import { startReceiver } from '../../helpers/http-receiver.js';
import { cpuMark, othersCores } from '../../helpers/cpu-time.js';
import { scaled, sleep } from '../../helpers/deadline.js';

const A_FLOWS = 60;
const SLOW_RECEIVER_MS = 2000;
/** How long B's latency is sampled in each phase (at least MIN_SAMPLES events), and the pause between events. */
const PHASE_MS = 12_000;
const MIN_SAMPLES = 20;
/**
 * The percentile compared. The bound is at p99, but of 15–25 samples a p99 is their maximum: one
 * stall of the machine (another test file's process starting beside this one in CI) decided it, and the
 * test failed one clean CI run in four by 97 ms. p95 is the second highest of 20 or more; p99 is printed.
 */
const COMPARED = 0.95;
const PAUSE_MS = 100;
/**
 * B's idle p95 times this is the bound under load: twice for B's own work sharing the storage process and
 * the cores with A's one turn at a time, and once more because the machine is not the same between the
 * phases in what CPU time does not show (disks, caches). What the other files of the suite take of the
 * cores beside this one is measured, and scales the bound: one clean CI run had B's p95 at 3875 ms under
 * load against 951 idle, 4.1×, while B's flow took every turn (beside two busy loops in both phases it is
 * 1.5×). What it is there to catch is no ratio: before the per-org turns B's events waited behind A's 60
 * runs for over 10 s (DEADLINE_MS).
 */
const FACTOR = 3;
/**
 * Added to FACTOR times B's idle p95. What B waits for besides is not the flows' to share: the compactor writes the
 * orgs of a batch one after another, so B's commit may wait for one commit interval (MIN_COMMIT_INTERVAL_MS,
 * 100 ms) and for A's commit before it in their batch, which waits for A's statement in progress (20–480 ms,
 * p90, on a 2-core machine at load 15). (B is told of its commit at once, not after A's, and its profiles
 * are refreshed in their own line, not after A's: without those two, beside two busy loops, B's p95 grew
 * 1.9–2.0× under A's load, 3.6–3.8× in two CI runs; with them 1.2×.)
 */
const SLACK_MS = scaled(500);
/** How long a B event may take; one not delivered by then counts as this, and ends the phase. */
const DEADLINE_MS = scaled(10_000);

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(values.length * p) - 1)] ?? 0;

/**
 * A receiver that notes when each eventId first arrived (epoch ms, comparable with the database's
 * timestamps) and answers after `delayMs`.
 */
async function timedReceiver(delayMs: number) {
  const arrived = new Map<string, number>();
  const receiver = await startReceiver([
    (res, n) => {
      const eventId = (JSON.parse(receiver.received[n]!.body) as { eventId?: string }).eventId ?? '';
      if (!arrived.has(eventId)) arrived.set(eventId, Date.now());
      setTimeout(() => res.writeHead(204).end(), delayMs);
    },
  ]);
  return { receiver, arrived };
}

const hook = (url: string) => ({ channel: 'webhook', url, template: { body: { eventId: '{{ event.event_id }}' } } });

t.test("one org's 60 one-second flows and slow receiver leave another org's flows their latency and their turns", async (t) => {
  const T0 = Date.now();
  const mark = (what: string) => t.comment(`${what} at ${Date.now() - T0} ms`);
  const h = await startTestApp(t, { config: { ...STORAGE_PROCESS, webhookTimeoutMs: 30_000 } });
  const noisy = await h.createOrg('noisy');
  const quiet = await h.createOrg('quiet');
  const slow = await timedReceiver(SLOW_RECEIVER_MS);
  const fast = await timedReceiver(0);
  t.teardown(() => slow.receiver.close());
  t.teardown(() => fast.receiver.close());

  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER, 'quiet');
  // Real time (it runs as B's events are stored) and due each second besides.
  await startFlow(h, { id: 'quiet_flow', realTime: true, scheduleSeconds: 1, message: hook(fast.receiver.url) }, 'quiet');
  // As the API shows it: an empty run writes last_run_at to the database at most once a minute (flow-store.ts).
  const lastRun = async () => {
    const at = ((await h.admin('GET', '/admin/v1/orgs/quiet/flows/quiet_flow')).json() as { lastRunAt: string | null }).lastRunAt;
    return at === null ? null : Date.parse(at);
  };

  let sample = 0;
  /** One B event: acknowledged → its webhook received, ms (DEADLINE_MS when it was not). */
  const measure = async (id: string): Promise<number> => {
    const res = await h.collect(customEvent(quiet.production, { messageId: id, traits: { email: `${id}@example.com` } }));
    if (res.statusCode !== 200) throw new Error(`collect: ${res.statusCode} ${res.body}`);
    const acknowledged = Date.now();
    await waitFor(async () => fast.arrived.has(id), DEADLINE_MS).catch(() => undefined);
    return (fast.arrived.get(id) ?? acknowledged + DEADLINE_MS) - acknowledged;
  };
  /**
   * B's events one after another (each after the last was delivered, so B never queues behind itself:
   * this measures latency, not B's throughput), for PHASE_MS; and the gaps between B's runs.
   */
  const phase = async () => {
    const latencies: number[] = [];
    const ids: string[] = [];
    const runs: number[] = [];
    const started = Date.now();
    const cpu = cpuMark();
    let measuring = true;
    const watch = (async () => {
      while (measuring) {
        const at = await lastRun();
        if (at !== null && at !== runs.at(-1)) runs.push(at);
        await sleep(50);
      }
    })();
    while (Date.now() - started < PHASE_MS || latencies.length < MIN_SAMPLES) {
      ids.push(`quiet-${sample++}`);
      latencies.push(await measure(ids.at(-1)!));
      // Past any bound (before the fix): the file stays short.
      if (latencies.at(-1)! >= DEADLINE_MS) break;
      await sleep(PAUSE_MS);
    }
    const ended = Date.now();
    const others = othersCores(cpu);
    measuring = false;
    await watch;
    // The gaps between runs, with the phase's start and end: a flow that never ran has one gap, the phase.
    const marks = [started, ...runs.filter((at) => at >= started), ended];
    const gaps = marks.slice(1).map((at, i) => at - marks[i]!);
    return { latencies, gaps, runs: runs.length, ids, others };
  };
  /**
   * Where B's events spent their time, p50/p95 ms per stage: acknowledged → stored (visible_at), stored →
   * the run's decision time (the send's created_at, taken once its window is read), decision time →
   * received (the fold wait, rules, rendering, the run's transaction, delivery). Printed so a failure says
   * which stage grew.
   */
  const stages = async (ids: string[]) => {
    const rows = await h.db('quiet').all<{ id: string; received: Date; visible: Date; decided: Date | null }>(
      `SELECT e.message_id AS id, e.received_at AS received, e.visible_at AS visible, min(s.created_at) AS decided
       FROM events e LEFT JOIN flow_sends s ON s.event_id = e.message_id
       WHERE e.message_id IN (SELECT unnest($1::VARCHAR[])) GROUP BY ALL`,
      [listValue(ids)],
    );
    const spans = { stored: [] as number[], run: [] as number[], send: [] as number[] };
    for (const row of rows) {
      spans.stored.push(row.visible.getTime() - row.received.getTime());
      const at = fast.arrived.get(row.id);
      if (!row.decided) continue;
      spans.run.push(row.decided.getTime() - row.visible.getTime());
      if (at !== undefined) spans.send.push(at - row.decided.getTime());
    }
    return Object.entries(spans)
      .map(([stage, ms]) => `${stage} ${Math.round(percentile(ms, 0.5))}/${Math.round(percentile(ms, COMPARED))}`)
      .join(', ');
  };

  // B alone: a first event warms up the renderer and B's database.
  await h.collect(customEvent(quiet.production, { messageId: 'warm-up' }));
  await waitFor(async () => fast.arrived.has('warm-up'), DEADLINE_MS);
  mark('warm');
  const idle = await phase();
  mark('idle');

  // A: 60 one-second flows, every other one with a wait step, all sending to the slow receiver.
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER, 'noisy');
  const message = hook(slow.receiver.url);
  const shapes = [{ message }, { steps: [{ wait: { seconds: 1 } }, { message }] }];
  // Ten at a time: one by one, 60 take ~10 s on a loaded machine.
  for (let i = 0; i < A_FLOWS; i += 10) {
    await Promise.all(Array.from({ length: 10 }, (_, j) => startFlow(h, { id: `noisy_${i + j}`, realTime: true, scheduleSeconds: 1, ...shapes[j % 2] }, 'noisy')));
  }
  mark('A flows');
  let loading = true;
  const load = (async () => {
    for (let i = 0; loading; i++) {
      await h.collect(customEvent(noisy.production, { messageId: `noisy-${i}`, traits: { email: `n${i % 40}@example.com` } }));
      await sleep(250);
    }
  })();
  t.teardown(async () => {
    loading = false;
    await load;
  });
  // Under load: A's sends fill its receiver and queue behind it.
  // Reaching the load is not what is measured: its deadline only bounds a hang (a loaded CI machine took over 30 s).
  await waitFor(async () => slow.receiver.received.length >= 32 && h.app.flowsRole!.dispatcher.pending >= 200, scaled(120_000));
  mark('A loaded');
  const busy = await phase();
  mark('busy');
  const aSends = slow.receiver.received.length;
  loading = false;
  await load;
  // A's sends in flight end now rather than after 2 s each: the app closes sooner.
  await slow.receiver.close();

  const idleP = percentile(idle.latencies, COMPARED);
  const busyP = percentile(busy.latencies, COMPARED);
  // The cores the machine left this test in each phase (at least a quarter of one), and how much fewer under load.
  const left = (p: typeof idle) => Math.max(0.25, availableParallelism() - p.others);
  const share = Math.max(1, left(idle) / left(busy));
  const bound = (idleMs: number) => Math.round(FACTOR * share * idleMs + SLACK_MS);
  const summary = (p: typeof idle) =>
    `${p.latencies.length} events, p50 ${Math.round(percentile(p.latencies, 0.5))} p95 ${Math.round(percentile(p.latencies, 0.95))} p99 ${Math.round(percentile(p.latencies, 0.99))} max ${Math.round(Math.max(...p.latencies))}`;
  t.comment(`B ms idle: ${summary(idle)}; under A's load: ${summary(busy)}; A's receiver got ${aSends}`);
  t.comment(`the rest of the machine kept ${idle.others.toFixed(2)} cores busy idle, ${busy.others.toFixed(2)} under load: share ${share.toFixed(2)}`);
  t.comment(`B's stages p50/p95 ms idle: ${await stages(idle.ids)}; under A's load: ${await stages(busy.ids)}`);
  t.ok(busy.latencies.every((ms) => ms < DEADLINE_MS), `every B event was delivered under A's load (${busy.latencies.length} events)`);
  t.ok(busyP <= bound(idleP), `B's p95 under A's load ${Math.round(busyP)} ms ≤ ${FACTOR} × ${share.toFixed(2)} × idle p95 ${Math.round(idleP)} + ${SLACK_MS} ms`);

  // B's flow is due each second: the gaps between its runs under load stay within FACTOR times the idle ones,
  // held like the latencies at p95 (a run that writes lastRunAt is one that had B's event, so the longest gap
  // is B's slowest event: one stall of the machine, 6.5 s against 1.9 s idle in one CI run). Starving, as
  // before the per-org turns, is no stall: the flow did not run for longer than DEADLINE_MS.
  const gapP = (p: typeof idle) => percentile(p.gaps, COMPARED);
  t.comment(`B's flow: ${idle.runs} runs idle (gaps p95 ${gapP(idle)}, max ${Math.max(...idle.gaps)} ms), ${busy.runs} under load (p95 ${gapP(busy)}, max ${Math.max(...busy.gaps)} ms)`);
  t.ok(gapP(busy) <= bound(gapP(idle)), `B's flow took its due turns: gaps p95 ${gapP(busy)} ms ≤ ${FACTOR} × ${share.toFixed(2)} × ${gapP(idle)} + ${SLACK_MS} ms`);
  t.ok(Math.max(...busy.gaps) < DEADLINE_MS, `B's flow never went ${DEADLINE_MS} ms without a run (longest gap ${Math.max(...busy.gaps)} ms)`);
  mark('asserted');
  await h.close();
  mark('closed');
});
