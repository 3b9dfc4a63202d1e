/**
 * A load spread evenly over several processes of one role (bench/scale.ts), and what a load generator
 * for it does: wrk (bench/wrk.ts) when installed, else autocannon in this process (weaker: it takes a
 * core's share from the service on a 2-core machine, and sizes its runs by count, not time).
 */
import { BodyTemplate, type Credentials } from './bodies.js';
import { type Latency, latencyOf, runLoad } from './load.js';
import { selfCpuSeconds } from './procs.js';

/** What each request looks like. */
export type SpreadRequests =
  /** /http/v1/collect bodies (bodies.ts): a unique messageId per event, identities cycled. */
  /** With `batchSize`, /http/v1/batch bodies of that many events (wrk only; one identity per body). */
  | { method: 'POST'; path: string; credentials: Credentials; batchSize?: number }
  /** Paths cycled over (e.g. contact lookups), the same headers on each. */
  | { method: 'GET'; paths: string[]; headers: Record<string, string> }
  /** Fixed bodies cycled over (e.g. batch lookups), the same headers on each (wrk only). */
  | { method: 'POST'; path: string; bodies: string[]; headers: Record<string, string>; fixed: true };

export interface SpreadLoad {
  /** Base URLs (http://127.0.0.1:<port>); the connections are split evenly over them. */
  targets: string[];
  requests: SpreadRequests;
  /** Connections per target. */
  connections: number;
  seconds: number;
  /** Unique per run: part of every messageId. */
  tag: string;
}

export interface SpreadResult {
  seconds: number;
  /** Answered requests. */
  requests: number;
  ok: number;
  non2xx: number;
  /** Socket errors and timeouts. */
  errors: number;
  /** 2xx answers per second. */
  reqPerSec: number;
  /** Requests sent to each target, in `targets` order (wrk counts them as sent: ±connections). */
  perTarget: number[];
  /** Milliseconds, every answer. */
  latency: Latency;
  /** CPU seconds the load generator used during the run. */
  loadGeneratorCpuSeconds: number;
}

export interface LoadGenerator {
  /** For the report: what generated the load. */
  readonly description: string;
  run(load: SpreadLoad): Promise<SpreadResult>;
}

/**
 * The fallback: autocannon (load.ts) in this process, one instance per target run side by side. It
 * runs a fixed count (see load.ts), sized from the previous run with the same requests (the warm-up).
 */
export function autocannonGenerator(): LoadGenerator {
  const lastRate = new Map<string, number>();
  return {
    description: 'autocannon 9 in the bench process, one instance per target (fallback: wrk is not installed)',
    async run(load) {
      const r = load.requests;
      if ('fixed' in r) throw new Error('fixed bodies are sent by wrk only: install wrk (apt-get install wrk)');
      const key = `${r.method === 'POST' ? r.path : r.paths[0]!.split('?')[0]} ${load.targets.length}`;
      const rate = lastRate.get(key);
      const perTargetAmount = rate ? Math.round((rate * load.seconds) / load.targets.length) : load.connections * 40;
      const cpuBefore = selfCpuSeconds();
      const results = await Promise.all(
        load.targets.map((url, i) => {
          const spec =
            r.method === 'POST'
              ? { method: 'POST' as const, bodies: BodyTemplate.single(r.credentials, `${load.tag}-${i}`) }
              : { method: 'GET' as const, headers: r.headers, paths: cycle(r.paths, i) };
          const path = r.method === 'POST' ? r.path : r.paths[0]!;
          return runLoad({ url, path, ...spec, connections: load.connections, amount: perTargetAmount, serverCpu: () => 0, keepLatencies: true });
        }),
      );
      const seconds = Math.max(...results.map((r) => r.seconds));
      const samples = new Float64Array(results.reduce((n, r) => n + (r.latencySamples?.length ?? 0), 0));
      let at = 0;
      for (const r of results) {
        samples.set(r.latencySamples ?? [], at);
        at += r.latencySamples?.length ?? 0;
      }
      const ok = results.reduce((n, r) => n + r.ok, 0);
      lastRate.set(key, ok / seconds);
      return {
        seconds,
        requests: results.reduce((n, r) => n + r.ok + r.non2xx, 0),
        ok,
        non2xx: results.reduce((n, r) => n + r.non2xx, 0),
        errors: results.reduce((n, r) => n + r.errors + r.timeouts, 0),
        reqPerSec: Math.round(ok / seconds),
        perTarget: results.map((r) => r.requests),
        // 2xx only (load.ts keeps no others): the same as every answer when non2xx is 0.
        latency: latencyOf(samples.sort()),
        loadGeneratorCpuSeconds: selfCpuSeconds() - cpuBefore,
      };
    },
  };
}

function cycle(paths: string[], offset: number): { next(): string } {
  let i = offset * 7919;
  return { next: () => paths[i++ % paths.length]! };
}
