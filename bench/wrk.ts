/**
 * wrk as the load generator of bench/scale.ts: a process of its own (C, epoll, LuaJIT), several times
 * cheaper per request than autocannon in Node, which matters when it shares 2 cores with the service.
 *
 * One wrk process per run; a generated Lua script points each wrk thread at one target (thread i at
 * target i mod n, through `thread.addr`), so connections are split evenly over the processes under
 * test and one latency histogram covers them all. Collect bodies are built per request in Lua from the
 * same text as bodies.ts (a unique messageId per event: run tag, thread, counter); GET requests are
 * formatted once per thread from a list of paths. wrk's CPU time comes from bash's `times` after it
 * exits (its children's user + system time), as /proc of an exited process is gone.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { batchText, IDENTITIES, PLACEHOLDERS, singleEventText } from './bodies.js';
import { round } from './load.js';
import { Child, tail } from './procs.js';
import type { LoadGenerator, SpreadLoad, SpreadRequests, SpreadResult } from './spread-load.js';

export interface WrkOptions {
  /** Path of the wrk binary. */
  wrk: string;
  /** Where the scripts and outputs go. */
  workDir: string;
  /** wrk threads (rounded up to a multiple of the targets, so each target gets as many). */
  threads: number;
  /** taskset CPU list for wrk, or undefined to leave it to the scheduler. */
  cpus: string | undefined;
  /** `wrk --version`'s first line, for the report. */
  version: string;
}

/** wrk answers a socket that hangs this long with a timeout error rather than waiting forever. */
const TIMEOUT = '30s';

export function wrkGenerator(options: WrkOptions): LoadGenerator {
  let runs = 0;
  return {
    description: `${options.version}, its own process${options.cpus ? ` on CPUs ${options.cpus}` : ' (not pinned)'}, one thread per target or more`,
    async run(load) {
      const n = ++runs;
      const threads = Math.ceil(Math.max(options.threads, 1) / load.targets.length) * load.targets.length;
      const connections = Math.max(threads, Math.ceil((load.connections * load.targets.length) / threads) * threads);
      const script = join(options.workDir, `wrk-${n}.lua`);
      writeFileSync(script, luaScript(load, threads));
      const logFile = join(options.workDir, `wrk-${n}.out`);
      const first = new URL(load.targets[0]!);
      const path = load.requests.method === 'POST' ? load.requests.path : load.requests.paths[0]!;
      const args = ['-t', String(threads), '-c', String(connections), '-d', `${load.seconds}s`, '--timeout', TIMEOUT, '-s', script, `${first.origin}${path}`];
      const child = Child.exec('wrk', 'bash', ['-c', '"$0" "$@"; status=$?; times; exit $status', options.wrk, ...args], {
        logFile,
        group: true,
        ...(options.cpus ? { cpus: options.cpus } : {}),
      });
      const exit = await child.exited;
      await child.flushed;
      if (exit.code !== 0) throw new Error(`wrk exited with ${exit.code ?? exit.signal}:\n${tail(logFile)}`);
      return parse(readFileSync(logFile, 'utf8'), load.targets.length, logFile);
    },
  };
}

interface WrkOutput {
  durationUs: number;
  requests: number;
  status: number;
  connect: number;
  read: number;
  write: number;
  timeout: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
  perThread: number[];
}

function parse(output: string, targets: number, logFile: string): SpreadResult {
  const line = output.split('\n').find((l) => l.startsWith('WRK_RESULT '));
  if (!line) throw new Error(`wrk printed no result:\n${tail(logFile)}`);
  const w = JSON.parse(line.slice('WRK_RESULT '.length)) as WrkOutput;
  // bash's `times`: the shell's user and system time, then its children's (wrk's): "0m1.234s 0m0.567s".
  const times = output.trimEnd().split('\n').at(-1)!.match(/(\d+)m([\d.]+)s (\d+)m([\d.]+)s/);
  if (!times) throw new Error(`no CPU times after wrk's output:\n${tail(logFile)}`);
  const cpu = Number(times[1]) * 60 + Number(times[2]) + Number(times[3]) * 60 + Number(times[4]);
  const seconds = w.durationUs / 1e6;
  const perTarget = Array.from({ length: targets }, (_, t) => w.perThread.filter((_, i) => i % targets === t).reduce((a, b) => a + b, 0));
  const ms = (us: number) => round(us / 1000);
  return {
    seconds: round(seconds, 2),
    requests: w.requests,
    ok: w.requests - w.status,
    non2xx: w.status,
    errors: w.connect + w.read + w.write + w.timeout,
    reqPerSec: Math.round((w.requests - w.status) / seconds),
    perTarget,
    latency: { p50: ms(w.p50), p90: ms(w.p90), p99: ms(w.p99), p999: ms(w.p999), max: ms(w.max), mean: ms(w.mean) },
    loadGeneratorCpuSeconds: round(cpu, 3),
  };
}

/** A Lua long string that cannot be closed early by the text. */
function luaString(text: string): string {
  let level = '=';
  while (text.includes(`]${level}]`)) level += '=';
  return `[${level}[${text}]${level}]`;
}

function luaScript(load: SpreadLoad, threads: number): string {
  const ports = load.targets.map((t) => Number(new URL(t).port));
  return [
    '-- Generated by bench/wrk.ts for one run.',
    `local ports = { ${ports.join(', ')} }`,
    'local threads = {}',
    'function setup(thread)',
    '  local n = #threads',
    '  thread:set("tid", n)',
    '  thread.addr = wrk.lookup("127.0.0.1", tostring(ports[(n % #ports) + 1]))[1]',
    '  threads[n + 1] = thread',
    'end',
    '-- Requests sent by this thread; a global, so done() can read it with thread:get.',
    'counter = 0',
    ...requestFunction(load.requests, load.tag),
    'function done(summary, latency, requests)',
    '  local per = {}',
    '  for i, t in ipairs(threads) do per[i] = t:get("counter") or 0 end',
    '  local e = summary.errors',
    '  io.write(string.format(\'WRK_RESULT {"durationUs":%d,"requests":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,\' ..',
    '    \'"p50":%d,"p90":%d,"p99":%d,"p999":%d,"max":%d,"mean":%.1f,"perThread":[%s]}\\n\',',
    '    summary.duration, summary.requests, e.status, e.connect, e.read, e.write, e.timeout,',
    '    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),',
    '    latency.max, latency.mean, table.concat(per, ",")))',
    'end',
    `-- ${threads} threads`,
    '',
  ].join('\n');
}

/** Requests made once in `init` by `format` (Lua, of `item` and `headers`) from each of `items` (paths or bodies), then sent in turn. */
function cycled(headers: Record<string, string>, items: string[], format: string): string[] {
  // A space inside the key's brackets: `[[=[` would open a long string.
  const entries = Object.entries(headers).map(([k, v]) => `[ ${luaString(k)} ] = ${luaString(v)}`);
  return [
    `local items = {\n${items.map((item) => `  ${luaString(item)},`).join('\n')}\n}`,
    `local headers = { ${entries.join(', ')} }`,
    'local prepared = {}',
    'function init(args)',
    `  for i, item in ipairs(items) do prepared[i] = ${format} end`,
    'end',
    'function request()',
    '  counter = counter + 1',
    '  return prepared[((tid * 7919 + counter) % #prepared) + 1]',
    'end',
  ];
}

function requestFunction(requests: SpreadRequests, tag: string): string[] {
  if (requests.method === 'GET') return cycled(requests.headers, requests.paths, 'wrk.format("GET", item, headers)');
  if ('fixed' in requests) return [`local path = ${luaString(requests.path)}`, ...cycled(requests.headers, requests.bodies, 'wrk.format("POST", path, headers, item)')];
  // The body text split at its placeholders: literal, slot, literal, …, literal.
  const text = requests.batchSize ? batchText(requests.credentials, tag, requests.batchSize) : singleEventText(requests.credentials, tag);
  const kinds = new Map<string, string>([
    [PLACEHOLDERS.sentAt[0]!, 'ts'],
    [PLACEHOLDERS.sequence[0]!, 'seq'],
    [PLACEHOLDERS.identity[0]!, 'id'],
  ]);
  const pieces = text.split(/(\u0001+|\u0002+|\u0003+)/);
  const literals = pieces.filter((_, i) => i % 2 === 0);
  const slots = pieces.filter((_, i) => i % 2 === 1).map((p) => kinds.get(p[0]!)!);
  // A table, not a chain of `..`: a batch body's hundreds of pieces would exceed Lua's syntax levels.
  const body = `table.concat({ ${literals.map((_, i) => `p[${i + 1}]${i < slots.length ? `, ${slots[i]}` : ''}`).join(', ')} })`;
  const width = (s: string) => s.length;
  return [
    `local p = {\n${literals.map((l) => `  ${luaString(l)},`).join('\n')}\n}`,
    'local headers = { ["Content-Type"] = "application/json" }',
    `local path = ${luaString(requests.path)}`,
    'function request()',
    '  counter = counter + 1',
    // sentAt to the second: the service's clock-skew check allows far more.
    `  local ts = string.format("%0${width(PLACEHOLDERS.sentAt)}d", os.time() * 1000)`,
    // Thread number and counter: unique within the run; the tag makes it unique across runs.
    `  local seq = string.format("%02d%0${width(PLACEHOLDERS.sequence) - 2}d", tid, counter)`,
    `  local id = string.format("%0${width(PLACEHOLDERS.identity)}d", (tid * 7919 + counter) % ${IDENTITIES})`,
    `  return wrk.format("POST", path, headers, ${body})`,
    'end',
  ];
}
