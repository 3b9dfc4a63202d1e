/**
 * A ratio of two servers' throughput measured in alternating turns. On a small shared VM the speed of
 * the machine drifts by ±20% over seconds (noisy neighbours; the load generator shares the cores), so
 * two 10 s blocks measured one after the other can differ by more than the effect being measured. In
 * turns (A B, B A, A B, …, each ~duration/rounds s, a quiet-machine check before each pair) both see
 * the same drift; each server's figures are its turns merged (requests summed, exact percentiles over
 * all its answers), and the per-turn ratios show the spread.
 */
import { ADMIN_KEY, say, sayMeasured, type Bench, type Measured, runOn, type Target, warmUp } from './harness.js';
import { latencyOf, type LoadResult, type RequestSpec, round } from './load.js';
import { waitQuiet } from './procs.js';
import { diff, scrape } from './server-metrics.js';

export interface Contender {
  label: string;
  target: Target;
  spec: RequestSpec;
}

export interface Alternated {
  /** Per contender, in the order given. */
  measured: Measured[];
  /** Per round: req/s of each contender. */
  rounds: number[][];
  /** Per round: the second contender's req/s ÷ the first's. */
  ratios: number[];
}

export async function measureAlternating(bench: Bench, contenders: Contender[], connections: number, rounds: number): Promise<Alternated> {
  const warm: Array<{ warmup: LoadResult; amount: number }> = [];
  for (const c of contenders) {
    const { warmup, rate } = await warmUp(c.target, c.spec, connections, bench.warmup);
    const amount = Math.round((rate * bench.duration) / rounds);
    say(`${c.label}: warm-up ${warmup.requests} requests in ${warmup.seconds} s, last ${rate} req/s; ${rounds} turns of ~${amount} requests`);
    warm.push({ warmup, amount });
  }
  const ownCpu = () => contenders.reduce((sum, c) => sum + c.target.serverCpu(), 0);
  const before = await Promise.all(contenders.map((c) => (c.target.hasMetrics ? scrape(c.target.url, ADMIN_KEY) : undefined)));
  const turns: LoadResult[][] = contenders.map(() => []);
  const perRound: number[][] = [];
  for (let r = 0; r < rounds; r++) {
    const quiet = await waitQuiet(0.3, bench.quietWaitMs, ownCpu);
    if (quiet.waitedMs > 1500) say(`turn ${r + 1}: waited ${quiet.waitedMs} ms for the machine to go quiet (${quiet.busyCores} cores busy)`);
    const order = contenders.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    const rates: number[] = [];
    for (const i of order) {
      const c = contenders[i]!;
      const run = await runOn(c.target, c.spec, connections, warm[i]!.amount, true);
      // A server still warming up (JIT, heap growth) may be faster than its last warm-up chunk: the
      // next turn is sized from this one, so turns last ~duration/rounds s.
      warm[i]!.amount = Math.round((run.reqPerSec * bench.duration) / rounds);
      // The check before the pair belongs to the pair's first turn only (merge sums the waits).
      const result = i === order[0] ? { ...run, quiet } : run;
      turns[i]!.push(result);
      rates[i] = result.reqPerSec;
    }
    perRound.push(rates);
  }
  const measured: Measured[] = [];
  for (let i = 0; i < contenders.length; i++) {
    const c = contenders[i]!;
    const result = merge(turns[i]!);
    const server = before[i] ? diff(before[i]!, await scrape(c.target.url, ADMIN_KEY)) : undefined;
    sayMeasured(`${c.label} (${rounds} turns)`, result, server);
    measured.push({ warmup: warm[i]!.warmup, measure: result, ...(server ? { server } : {}) });
  }
  const ratios = perRound.map((rates) => round(rates[1]! / rates[0]!));
  if (contenders.length === 2) say(`${contenders[1]!.label} ÷ ${contenders[0]!.label} per turn: ${ratios.join(', ')}`);
  return { measured, rounds: perRound, ratios };
}

/** Several runs of one server as one: counts summed, CPU weighted by time, exact merged percentiles. */
function merge(runs: LoadResult[]): LoadResult {
  const sum = (f: (r: LoadResult) => number) => runs.reduce((n, r) => n + f(r), 0);
  const seconds = sum((r) => r.seconds);
  const weighted = (f: (r: LoadResult) => number) => round(sum((r) => f(r) * r.seconds) / seconds, 2);
  const samples = new Float64Array(sum((r) => r.latencySamples?.length ?? 0));
  let at = 0;
  for (const r of runs) {
    samples.set(r.latencySamples ?? [], at);
    at += r.latencySamples?.length ?? 0;
  }
  samples.sort();
  const statusCodes: Record<string, number> = {};
  for (const r of runs) for (const [code, n] of Object.entries(r.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  const ok = sum((r) => r.ok);
  const okEvents = sum((r) => r.okEvents);
  const first = runs[0]!;
  return {
    seconds: round(seconds, 2),
    connections: first.connections,
    requests: sum((r) => r.requests),
    ok,
    okEvents,
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    statusCodes,
    reqPerSec: Math.round(ok / seconds),
    eventsPerSec: Math.round(okEvents / seconds),
    latency: latencyOf(samples),
    cpu: {
      server: weighted((r) => r.cpu.server),
      loadGenerator: weighted((r) => r.cpu.loadGenerator),
      machine: weighted((r) => r.cpu.machine),
      other: weighted((r) => r.cpu.other),
      machineCores: first.cpu.machineCores,
    },
    bodyBytes: first.bodyBytes,
    window: { startUs: first.window.startUs, endUs: runs[runs.length - 1]!.window.endUs },
    quiet: {
      waitedMs: sum((r) => r.quiet?.waitedMs ?? 0),
      busyCores: Math.max(...runs.map((r) => r.quiet?.busyCores ?? 0)),
    },
  };
}
