/**
 * Background loops that keep a JetStream feature busy while a cluster node is killed and record what
 * the client saw, with times from `performance.now()`: a publisher, a durable pull consumer, a KV
 * writer and a KV watcher. Each is stopped by the test; none asserts anything itself. Below them, the
 * small waiting and counting helpers the cluster tests share.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { performance } from 'node:perf_hooks';
import { sleep } from '../helpers/deadline.js';

/** Pace of each loop: light on a 2-core machine, dense enough to time a gap to ~20 ms. */
const PACE_MS = 20;

export interface Failure {
  at: number;
  /** The error's class, e.g. `TimeoutError`. */
  kind: string;
  /** `ErrorClass: message`. */
  error: string;
}

export interface PublishProbe {
  /** msgID → stream seq, when the acknowledged attempt was sent and when its ack arrived. */
  acked: Map<string, { seq: number; sentAt: number; at: number; subject: string; duplicate: boolean }>;
  failures: Failure[];
  stop(): Promise<void>;
}

/**
 * Publishes with msgID `<name>-<n>`, alternately on `<prefix>.orders.<name>` and `<prefix>.other.<name>`.
 * A failed publish is retried with the same msgID, as the service does with an unknown outcome.
 */
export function startPublisher(js: JetStreamClient, prefix: string, name: string, timeoutMs: number): PublishProbe {
  const acked: PublishProbe['acked'] = new Map();
  const failures: Failure[] = [];
  let stopped = false;
  const loop = (async () => {
    for (let n = 0; !stopped; ) {
      const id = `${name}-${n}`;
      const subject = `${prefix}.${n % 2 === 0 ? 'orders' : 'other'}.${name}`;
      const sentAt = performance.now();
      try {
        const ack = await js.publish(subject, id, { msgID: id, timeout: timeoutMs });
        acked.set(id, { seq: ack.seq, sentAt, at: performance.now(), subject, duplicate: ack.duplicate });
        n++;
      } catch (error) {
        failures.push(failure(error));
      }
      await sleep(PACE_MS);
    }
  })();
  return {
    acked,
    failures,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

export interface Delivery {
  id: string;
  at: number;
  redelivered: boolean;
  /** The server confirmed the ack (`ackAck()` resolved true). */
  ackConfirmed: boolean;
}

export interface ConsumeProbe {
  deliveries: Delivery[];
  failures: Failure[];
  /** Status notifications of the consume() iterator (`heartbeats_missed`, …), with times. */
  statuses: { at: number; type: string }[];
  stop(): Promise<void>;
}

/** Consumes a durable pull consumer with `consume()`, acking each message with `ackAck()`. */
export async function startConsumer(js: JetStreamClient, stream: string, durable: string, expiresMs: number): Promise<ConsumeProbe> {
  const consumer = await js.consumers.get(stream, durable);
  const messages = await consumer.consume({ expires: expiresMs });
  const probe: ConsumeProbe = { deliveries: [], failures: [], statuses: [], stop: async () => {} };
  void (async () => {
    for await (const status of messages.status()) probe.statuses.push({ at: performance.now(), type: status.type });
  })();
  const loop = (async () => {
    for await (const m of messages) {
      const delivery: Delivery = { id: m.string(), at: performance.now(), redelivered: m.redelivered, ackConfirmed: false };
      probe.deliveries.push(delivery);
      try {
        delivery.ackConfirmed = await m.ackAck({ timeout: 2_000 });
      } catch (error) {
        probe.failures.push(failure(error));
      }
    }
  })();
  probe.stop = async () => {
    messages.stop();
    await loop;
  };
  return probe;
}

export interface KvWriteProbe {
  /** Value n → when its put was sent and when its ack arrived. */
  puts: Map<number, { sentAt: number; ackedAt: number; revision: number }>;
  failures: Failure[];
  stop(): Promise<void>;
}

/** Puts `<n>` under `key` in a loop. */
export function startKvWriter(kv: KV, key: string): KvWriteProbe {
  const probe: KvWriteProbe = { puts: new Map(), failures: [], stop: async () => {} };
  let stopped = false;
  const loop = (async () => {
    for (let n = 0; !stopped; ) {
      const sentAt = performance.now();
      try {
        const revision = await kv.put(key, String(n));
        probe.puts.set(n, { sentAt, ackedAt: performance.now(), revision });
        n++;
      } catch (error) {
        probe.failures.push(failure(error));
      }
      await sleep(PACE_MS);
    }
  })();
  probe.stop = async () => {
    stopped = true;
    await loop;
  };
  return probe;
}

export interface KvWatchProbe {
  /** Value n → when the watcher saw it. */
  seen: Map<number, number>;
  revisions: number[];
  /** The watch iterator ended (nats.js gave up on it). */
  ended: boolean;
  stop(): Promise<void>;
}

/** Watches `key` on its own connection's KV handle. */
export async function startKvWatcher(kv: KV, key: string): Promise<KvWatchProbe> {
  return startKvWatcherFrom(kv, key, 0);
}

export async function startKvWatcherFrom(kv: KV, key: string, revision: number): Promise<KvWatchProbe> {
  const watch = await kv.watch({ key, ...(revision > 0 ? { resumeFromRevision: revision } : {}) });
  const probe: KvWatchProbe = { seen: new Map(), revisions: [], ended: false, stop: async () => {} };
  const loop = (async () => {
    for await (const entry of watch) {
      if (entry.operation !== 'PUT') continue;
      probe.seen.set(Number(entry.string()), performance.now());
      probe.revisions.push(entry.revision);
    }
    probe.ended = true;
  })();
  probe.stop = async () => {
    watch.stop();
    await loop;
  };
  return probe;
}

export function failure(error: unknown): Failure {
  const e = error as Error;
  const kind = e?.constructor?.name ?? 'Error';
  return { at: performance.now(), kind, error: `${kind}: ${e?.message ?? String(error)}` };
}

/** Failures counted by kind, e.g. `{ "TimeoutError: timeout": 3 }`. */
export function tally(failures: Failure[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const f of failures) counts[f.error] = (counts[f.error] ?? 0) + 1;
  return counts;
}


/** Calls `fn` until it resolves, pausing 100 ms after each failure; rethrows the last failure after `deadline`. */
export async function retryUntil<T>(deadline: number, fn: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await fn();
    } catch (error) {
      if (performance.now() > deadline) throw error;
      await sleep(100);
    }
  }
}

/** Resolves true once `condition` holds, false if it still does not at `deadline`. */
export async function waitUntil(deadline: number, condition: () => boolean): Promise<boolean> {
  while (!condition()) {
    if (performance.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

/** The `q` quantile (0–1) of `values`, nearest rank. */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
}
