/**
 * bench/results/scale.json and the printed table of the scale phase (bench/scale.ts): per role and
 * process count, the turns merged; the scaling factor (2 processes ÷ 1); ratios to the bare endpoint of
 * the same process count; CPU per event of each kind of process; and the CPU-bound ceilings those imply
 * for a 16-core machine and a cluster of 3 such machines (the README's Benchmarks section says what
 * they leave out).
 */
import { table } from './harness.js';
import type { Role, ScaleOutcome, ScaleRun } from './scale.js';

const ROLES: Role[] = ['bare POST', 'bare GET', 'collect', 'api'];

export interface RoleSummary {
  role: Role;
  processes: number;
  turns: number;
  /** 2xx answers per second (= events/s for collect), mean of the turns; each turn's beside it. */
  reqPerSec: number;
  reqPerSecTurns: number[];
  /** ms: mean of the turns' p50, the worst turn's p99 and p99.9. */
  p50: number;
  p99: number;
  p999: number;
  /** CPU µs per 2xx answer, over all turns: the processes under test together, then each kind of helper. */
  us: { service: number; natsServer: number | null; shard: number | null; loadGenerator: number };
  /** CPU cores busy, mean of the turns. */
  cores: { service: number; natsServer: number | null; shard: number | null; loadGenerator: number; machine: number; other: number };
  non2xx: number;
  errors: number;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const r2 = (x: number) => Math.round(x * 100) / 100;

function isService(name: string): boolean {
  return /^(bare|collector|api)-\d+$/.test(name);
}

export function summarize(runs: ScaleRun[], role: Role, processes: number): RoleSummary | undefined {
  const mine = runs.filter((r) => r.role === role && r.processes === processes);
  if (mine.length === 0) return undefined;
  const ok = mine.reduce((n, r) => n + r.load.ok, 0);
  // µs per answer over all turns: each run's CPU (µs × its answers) summed, ÷ all answers.
  const us = (pick: (r: ScaleRun) => number) => Math.round(mine.reduce((n, r) => n + pick(r) * r.load.ok, 0) / Math.max(1, ok));
  const sumOf = (rec: Record<string, number>, test: (name: string) => boolean) => Object.entries(rec).reduce((n, [k, v]) => (test(k) ? n + v : n), 0);
  const has = (name: string) => name in mine[0]!.usPerRequest;
  return {
    role,
    processes,
    turns: mine.length,
    reqPerSec: Math.round(mean(mine.map((r) => r.load.reqPerSec))),
    reqPerSecTurns: mine.map((r) => r.load.reqPerSec),
    p50: r2(mean(mine.map((r) => r.load.latency.p50))),
    p99: Math.max(...mine.map((r) => r.load.latency.p99)),
    p999: Math.max(...mine.map((r) => r.load.latency.p999)),
    us: {
      service: us((r) => sumOf(r.usPerRequest, isService)),
      natsServer: has('nats-server') ? us((r) => r.usPerRequest['nats-server']!) : null,
      shard: has('shard-0') ? us((r) => r.usPerRequest['shard-0']!) : null,
      loadGenerator: us((r) => r.usPerRequest.loadGenerator!),
    },
    cores: {
      service: r2(mean(mine.map((r) => sumOf(r.cores, isService)))),
      natsServer: has('nats-server') ? r2(mean(mine.map((r) => r.cores['nats-server']!))) : null,
      shard: has('shard-0') ? r2(mean(mine.map((r) => r.cores['shard-0']!))) : null,
      loadGenerator: r2(mean(mine.map((r) => r.cores.loadGenerator!))),
      machine: r2(mean(mine.map((r) => r.cores.machine!))),
      other: r2(mean(mine.map((r) => r.cores.other!))),
    },
    non2xx: mine.reduce((n, r) => n + r.load.non2xx, 0),
    errors: mine.reduce((n, r) => n + r.load.errors, 0),
  };
}

/**
 * CPU µs per answer of a helper process over the runs of a role with `processes` processes. Its cost
 * per event falls as the rate grows (the shard commits at a fixed pace, so larger batches): the runs at
 * the highest rate are the closer to a larger machine's.
 */
function helperUs(runs: ScaleRun[], role: Role, processes: number, name: string): number | null {
  const mine = runs.filter((r) => r.role === role && r.processes === processes && name in r.usPerRequest);
  const ok = mine.reduce((n, r) => n + r.load.ok, 0);
  return ok ? Math.round(mine.reduce((n, r) => n + r.usPerRequest[name]! * r.load.ok, 0) / ok) : null;
}

/** CPU-bound ceilings: cores ÷ CPU per event, with the load generator elsewhere and nothing else limiting. */
function ceilings(runs: ScaleRun[], collect: RoleSummary | undefined, api: RoleSummary | undefined, most: number) {
  const nats = helperUs(runs, 'collect', most, 'nats-server');
  const shard = helperUs(runs, 'collect', most, 'shard-0');
  const perEvent = collect ? collect.us.service + (nats ?? 0) + (shard ?? 0) : null;
  // R3: each of the 3 servers stores every event (the leader also acks): nats-server's share counted 3 times.
  const perEventR3 = collect ? collect.us.service + 3 * (nats ?? 0) + (shard ?? 0) : null;
  const perLookup = api ? api.us.service : null;
  const at = (cores: number, us: number | null) => (us ? Math.round((cores * 1e6) / us) : null);
  return {
    basis:
      'CPU µs per event: the collector process of the 1-process runs (least contention), nats-server and the shard in the runs with the most collectors (highest rate); ' +
      'the api process of the 1-process runs per lookup',
    collect: {
      usPerEvent: collect ? { collector: collect.us.service, natsServer: nats, shard, total: perEvent } : null,
      sixteenCores: at(16, perEvent),
      threeMachinesOf16CoresR3: at(48, perEventR3),
    },
    api: { usPerRequest: perLookup, sixteenCores: at(16, perLookup), threeMachinesOf16Cores: at(48, perLookup) },
    leftOut:
      'one stream (one leader does every write), one DuckDB writer per org database on its shard, the network and the load balancer, ' +
      'memory bandwidth shared by 16 cores; see the README Benchmarks section',
  };
}

export function reportScale(outcome: ScaleOutcome, context: { machine: object; method: object; command: string; partial: boolean }) {
  const procs = [...new Set(outcome.runs.map((r) => r.processes))].sort((a, b) => a - b);
  const summaries = ROLES.flatMap((role) => procs.map((n) => summarize(outcome.runs, role, n)).filter((s): s is RoleSummary => s !== undefined));
  const find = (role: Role, n: number) => summaries.find((s) => s.role === role && s.processes === n);
  const lo = procs[0]!;
  const hi = procs[procs.length - 1]!;
  const factor = (role: Role) => {
    const a = find(role, lo);
    const b = find(role, hi);
    if (!a || !b || lo === hi) return null;
    const turns = Math.min(a.reqPerSecTurns.length, b.reqPerSecTurns.length);
    return {
      of: `${hi} processes ÷ ${lo}`,
      value: r2(b.reqPerSec / a.reqPerSec),
      perTurn: Array.from({ length: turns }, (_, i) => r2(b.reqPerSecTurns[i]! / a.reqPerSecTurns[i]!)),
      usPerRequestChange: r2(b.us.service / a.us.service),
    };
  };
  const ratio = (role: Role, bare: Role) =>
    Object.fromEntries(procs.map((n) => [n, find(role, n) && find(bare, n) ? r2(find(role, n)!.reqPerSec / find(bare, n)!.reqPerSec) : null]));
  return {
    date: new Date().toISOString(),
    command: context.command,
    partial: context.partial,
    machine: context.machine,
    method: context.method,
    results: summaries,
    scaling: Object.fromEntries(ROLES.map((role) => [role, factor(role)])),
    ratioToBare: { collect: ratio('collect', 'bare POST'), api: ratio('api', 'bare GET') },
    ceilings: ceilings(outcome.runs, find('collect', lo), find('api', lo), hi),
    consistency: outcome.consistency,
    contacts: outcome.contacts,
    natsSyncAlways: outcome.syncAlways,
    runs: outcome.runs,
  };
}

export type ScaleReport = ReturnType<typeof reportScale>;

export function printScale(report: ScaleReport): void {
  const rows = report.results.map((s) => {
    const f = report.scaling[s.role];
    const bareRatio = s.role === 'collect' ? report.ratioToBare.collect[s.processes] : s.role === 'api' ? report.ratioToBare.api[s.processes] : null;
    return {
      role: s.role,
      procs: s.processes,
      'req/s': s.reqPerSec,
      turns: s.reqPerSecTurns.join(' '),
      'p50 ms': s.p50,
      'p99 ms': s.p99,
      'µs svc': s.us.service,
      'µs nats': s.us.natsServer ?? '',
      'µs shard': s.us.shard ?? '',
      'µs loadgen': s.us.loadGenerator,
      'cores svc': s.cores.service,
      'cores nats+shard': s.cores.natsServer === null ? '' : r2(s.cores.natsServer + (s.cores.shard ?? 0)),
      'cores loadgen': s.cores.loadGenerator,
      'cores other': s.cores.other,
      '× bare': bareRatio ?? '',
      factor: f && s.processes !== report.results.find((x) => x.role === s.role)!.processes ? `${f.value} (${f.perTurn.join(', ')})` : '',
      'non-2xx': s.non2xx + s.errors,
    };
  });
  console.log(`\n${table(rows)}\n`);
  const c = report.ceilings;
  console.log(
    `CPU-bound ceilings (${c.basis}): collect ${c.collect.sixteenCores ?? '-'} events/s on 16 cores, ${c.collect.threeMachinesOf16CoresR3 ?? '-'} on 3×16 cores (R3); ` +
      `lookups ${c.api.sixteenCores ?? '-'} /s on 16 cores, ${c.api.threeMachinesOf16Cores ?? '-'} on 3×16`,
  );
  if (report.consistency) console.log(`consistency: ${JSON.stringify(report.consistency)}`);
}
