/**
 * The scale phase's settings from bench/run.ts's options: which cores the processes under test get
 * and which are left for the rest, the load generator (wrk, installed if missing; else autocannon with
 * a note), then bench/scale.ts and its report (bench/results/scale.json).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { type Bench, say } from './harness.js';
import { benchScale } from './scale.js';
import { printScale, reportScale } from './scale-report.js';
import { autocannonGenerator, type LoadGenerator } from './spread-load.js';
import { commandVersion as version, ensureCommand } from './system-tools.js';
import { wrkGenerator } from './wrk.js';

export interface ScalePhaseOptions {
  /** Comma-separated process counts, e.g. "1,2". */
  procs: string;
  /** Comma-separated CPUs of the processes under test, or '' for 0, 1, …. */
  cores: string;
  turns: number;
  contacts: number;
  /** Per process under test. */
  connections: number;
  loadgen: string;
  wrkThreads: number;
  resultsDir: string;
  /** The machine, read when the report is written. */
  machine: () => object;
  command: string;
  /** Default settings: the result goes to scale.json, else to partial-scale.json.tmp. */
  defaults: boolean;
}

export async function runScalePhase(bench: Bench, options: ScalePhaseOptions): Promise<void> {
  const procs = options.procs.split(',').map(Number);
  if (procs.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--scale-procs: process counts, e.g. 1,2 (got ${options.procs})`);
  const max = Math.max(...procs);
  const machineCores = cpus().length;
  const cores = options.cores ? options.cores.split(',').map(Number) : Array.from({ length: Math.min(max, machineCores) }, (_, i) => i);
  if (cores.length < max) say(`scale: ${max} processes on ${cores.length} cores: some share a core`);
  // The rest (nats-server, the shard, wrk) gets the cores no process under test has; on a machine with
  // none left (2 cores, 2 processes) it is not pinned and competes with them (README "Benchmarks").
  const rest = Array.from({ length: machineCores }, (_, i) => i).filter((c) => !cores.includes(c));
  const restCpus = rest.length > 0 ? rest.join(',') : undefined;

  const natsServer = ensureCommand('nats-server', 'nats-server', true);
  if (!natsServer) throw new Error('scale: nats-server is needed (apt-get install -y nats-server)');
  const generator = loadGenerator(options, bench.workDir, restCpus);
  const loadAverageAtStart = loadavg().map((x) => Math.round(x * 100) / 100);

  const outcome = await benchScale(bench, {
    procs,
    cores,
    restCpus,
    connections: options.connections,
    contacts: options.contacts,
    turns: options.turns,
    generator,
    natsServer,
  });
  const report = reportScale(outcome, {
    machine: { ...options.machine(), loadAverageAtStart },
    command: options.command,
    partial: !options.defaults,
    method: {
      loadGenerator: generator.description,
      layout:
        `a private nats-server (${version(natsServer)}, JetStream file storage, R1), one storage shard (ROLES=compactor,flows, SHARD=0/1) ` +
        'compacting every event, and 1…n processes of the role under test, each `node dist/src/server.js` in NATS mode, LOG_LEVEL=warn',
      pinning: { processesUnderTest: cores, rest: restCpus ?? 'not pinned (no core left)' },
      connectionsPerProcess: options.connections,
      turns: `${options.turns} turns of ${procs.join(', ')} processes (every other turn in reverse order), each ${bench.warmup} s warm-up then ${bench.duration} s measured`,
      requests: {
        collect: 'POST /http/v1/collect, one custom track event (bodies.ts), unique messageId per event, identities cycled over 20,000',
        api: `GET /audience/v2/contacts over ${options.contacts} imported contacts, random contact and identity type (contacts.ts IDENTITY_MIX)`,
        bare: 'bench/bare-server.ts with the same bodies (POST /bare) and the same request shape (GET /bare-contact, a token of the same length)',
      },
      cpu: 'each process from /proc/<pid>/stat before and after; wrk from bash `times`; µs per 2xx answer; cores = CPU s per wall s; other = machine − ours (other sessions)',
      latency: 'ms over every answer (wrk histogram); p50 mean of turns, p99 worst turn',
    },
  });
  printScale(report);
  const out = join(options.resultsDir, options.defaults ? 'scale.json' : 'partial-scale.json.tmp');
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  say(`wrote ${out}`);
}

function loadGenerator(options: ScalePhaseOptions, workDir: string, restCpus: string | undefined): LoadGenerator {
  if (options.loadgen === 'wrk') {
    const wrk = ensureCommand('wrk', 'wrk', true);
    if (wrk) return wrkGenerator({ wrk, workDir, threads: options.wrkThreads, cpus: restCpus, version: version(wrk) });
    say('scale: NOTE wrk is not available, falling back to autocannon in this process: it takes about a core of its own, figures are lower');
  } else if (options.loadgen !== 'autocannon') {
    throw new Error(`--loadgen: wrk or autocannon (got ${options.loadgen})`);
  }
  return autocannonGenerator();
}
