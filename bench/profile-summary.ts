/**
 * Summarizes a V8 .cpuprofile (node --cpu-prof): self time by function, self time by area (a package
 * under node_modules, a file of ours, node internals, GC/idle/program), and inclusive time of our own
 * functions. Usage: npx tsx bench/profile-summary.ts <file.cpuprofile> [--top 30]
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Row {
  name: string;
  ms: number;
  share: number;
}

export interface ProfileSummary {
  file: string;
  /** The part of the profile summarized (CLOCK_MONOTONIC µs, as V8 and process.hrtime use), if cut. */
  window: { startUs: number; endUs: number } | null;
  totalMs: number;
  /** Sampled time other than (idle). */
  busyMs: number;
  selfByFunction: Row[];
  selfByArea: Row[];
  /** Every busy sample put in one bucket by what its stack is doing (see activityOf). */
  byActivity: Row[];
  inclusiveOwnCode: Row[];
}

/** The first matching rule wins, looking at every frame of the sample's stack. */
const ACTIVITIES: Array<[string, RegExp]> = [
  // Before compaction: the lookup's ProfileIndex.find lives in src/events/profiles/ too.
  ['audience API handler (src/routes/audience, src/control, src/ratelimit)', /\/src\/(routes\/audience|control|ratelimit)\//],
  ['compaction (src/events/compaction, src/events/profiles, src/db, duckdb)', /\/src\/(events\/compaction|events\/profiles|db)\/|@duckdb\//],
  ['log append (src/events/log: group commit, avro, frame write, fdatasync)', /\/src\/events\/log\//],
  ['collect handler (src/routes/http, src/events/collect)', /\/src\/(routes\/http|events\/collect)\//],
  ['metrics (prom-client)', /prom-client\//],
  ['http + fastify (parse, route, hooks, reply, sockets)', /fastify\/|secure-json-parse|node:_http|node:net|\/src\/http\/|pino|find-my-way|light-my-request|stream_base/],
];

function shortUrl(url: string): string {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const src = url.search(/\/(src|bench|dist)\//);
  if (src >= 0) return url.slice(src + 1);
  return url.replace(/^file:\/\//, '');
}

function areaOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return url.startsWith('node:internal/') ? `node:${url.split('/')[1]}` : url;
  const own = url.search(/\/(src|bench)\//);
  if (own >= 0) return url.slice(own + 1).replace(/\.[jt]s$/, '');
  return shortUrl(url);
}

function label(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  return frame.url ? `${name}  ${shortUrl(frame.url)}:${frame.lineNumber + 1}` : name;
}

function isOwn(frame: CallFrame): boolean {
  return !frame.url.includes('node_modules/') && /\/(src|bench)\//.test(frame.url);
}

function top(map: Map<string, number>, total: number, n: number): Row[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, us]) => ({ name, ms: Math.round(us / 1000), share: Math.round((us / total) * 1000) / 10 }));
}

export function summarizeProfile(file: string, n = 30, window?: { startUs: number; endUs: number }): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }

  const self = new Map<string, number>();
  const area = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const activity = new Map<string, number>();
  let total = 0;
  let idle = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const us = profile.timeDeltas[i] ?? 0;
    at += us;
    if (window && (at < window.startUs || at > window.endUs)) continue;
    const node = byId.get(profile.samples[i]!)!;
    total += us;
    if (node.callFrame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    const key = label(node.callFrame);
    self.set(key, (self.get(key) ?? 0) + us);
    const a = areaOf(node.callFrame);
    area.set(a, (area.get(a) ?? 0) + us);
    // Inclusive time of our own functions, each counted once per sample even when recursive.
    const seen = new Set<string>();
    const urls: string[] = [];
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame;
      urls.push(frame.url || frame.functionName);
      if (!isOwn(frame)) continue;
      const k = label(frame);
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + us);
    }
    const stack = urls.join('\n');
    const act = node.callFrame.functionName.startsWith('(') && !node.callFrame.url
      ? node.callFrame.functionName
      : (ACTIVITIES.find(([, re]) => re.test(stack))?.[0] ?? 'other');
    activity.set(act, (activity.get(act) ?? 0) + us);
  }
  const busy = total - idle;
  return {
    file,
    window: window ?? null,
    totalMs: Math.round(total / 1000),
    busyMs: Math.round(busy / 1000),
    selfByFunction: top(self, busy, n),
    selfByArea: top(area, busy, n),
    byActivity: top(activity, busy, n),
    inclusiveOwnCode: top(inclusive, busy, n),
  };
}

export function printSummary(s: ProfileSummary): void {
  const show = (title: string, rows: Row[]) => {
    console.log(`\n${title} (share of ${s.busyMs} ms busy)`);
    for (const r of rows) console.log(`${String(r.share).padStart(6)}%  ${String(r.ms).padStart(7)} ms  ${r.name}`);
  };
  console.log(`profile ${s.file}${s.window ? ' (measurement window)' : ''}: ${s.totalMs} ms sampled on the main thread, ${s.busyMs} ms not idle`);
  show('main-thread time by activity', s.byActivity);
  show('self time by area', s.selfByArea);
  show('self time by function', s.selfByFunction);
  show('inclusive time, own code (src/, bench/)', s.inclusiveOwnCode);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const file = args.find((a) => !a.startsWith('--'));
  const topIndex = args.indexOf('--top');
  if (!file) {
    console.error('usage: tsx bench/profile-summary.ts <file.cpuprofile> [--top N]');
    process.exit(2);
  }
  printSummary(summarizeProfile(file, topIndex >= 0 ? Number(args[topIndex + 1]) : 30));
}
