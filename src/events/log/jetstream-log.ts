/**
 * The JetStream log: records are messages of one file-backed stream, each on its org's subject
 * (`audience.events.<org>`), so a storage shard can tell its orgs' records from the subject alone.
 * Durability is the publish ack; dedupe is JetStream's own (`msgID` within `duplicate_window`).
 * Connection status is tracked so that, while NATS is down, `isAvailable()` says so and writes fail at
 * once instead of waiting out the publish timeout. A stream that ends below the high-water mark (deleted
 * and recreated: its sequences restart at 1) is purged to start above it, if it is empty (`open`).
 */
import {
  JetStreamApiCodes,
  JetStreamApiError,
  StorageType,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Config } from '../../core/config.js';
import { type NatsSecurity, connectNats, natsSecurity, whileElecting } from '../../nats/nats-client.js';
import { JetStreamReader } from './jetstream-reader.js';
import {
  type LogBehind,
  LogBehindError,
  LogOutcomeUnknownError,
  LogUnavailableError,
  type LogBackend,
  type LogHealth,
  type LogReader,
  type WriteResult,
} from './types.js';

export interface JetStreamLogOptions {
  /** NATS server URL(s), comma-separated. */
  servers: string;
  /** Default: `AUDIENCE_EVENTS`. */
  stream?: string;
  /** Default: `audience.events`. */
  subject?: string;
  /** Upper bound on one acknowledged write; beyond it the write's outcome is unknown. Default: 5000 */
  publishTimeoutMs?: number;
  /** Copies of each record when the stream is created (1, or 3 on a cluster). Default: 1 */
  replicas?: number;
  /** Records older than this are removed by JetStream, compacted or not (0: kept forever). Applied at every start. */
  maxAgeMs?: number;
  /** The oldest records are removed beyond this size (-1: no limit). Applied at every start. */
  maxBytes?: number;
  security?: NatsSecurity;
  /** The storage process's high-water mark and checkpoint (storage/checkpoint.ts): no record may get a
   *  sequence at or below the mark. Default: 0 (a process without org databases). */
  highWater?: number;
  compactedSeq?: number;
  /** Told when the stream ended below `highWater` and was purged to start above it. */
  onBehind?: (behind: LogBehind) => void;
}

export const DEFAULT_STREAM = 'AUDIENCE_EVENTS';
export const DEFAULT_SUBJECT = 'audience.events';
/** A retried publish (client timeout, reconnect) arrives well within 2 minutes; nanoseconds in the API. */
const DUPLICATE_WINDOW_NS = 2 * 60 * 1_000_000_000;
/** Upper bound on one acknowledged write; beyond it the caller gets a 503 rather than a hung request. */
export const DEFAULT_PUBLISH_TIMEOUT_MS = 5_000;
/** Shutdown must not hang on a server that stopped answering. */
const DRAIN_TIMEOUT_MS = 2_000;

export class JetStreamLog implements LogBackend {
  readonly kind = 'jetstream';
  readonly perOrg = true;
  private connected = true;
  private closing = false;
  /** Rejects when the current connection drops: in-flight writes race it to fail fast. */
  private dropped = connectionDrop();
  /** The health ping awaiting its PONG; a frozen server never answers, so probes share it, not pile up. */
  private ping: Promise<number> | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    readonly stream: string,
    readonly subject: string,
    private readonly publishTimeoutMs: number,
  ) {
    void this.watchStatus();
  }

  /** Removes every record of a deleted org from the stream (its subject only). */
  async purgeOrg(org: string): Promise<void> {
    await this.jsm.streams.purge(this.stream, { filter: `${this.subject}.${org}` });
  }

  static async open(options: JetStreamLogOptions): Promise<JetStreamLog> {
    const stream = options.stream ?? DEFAULT_STREAM;
    const subject = options.subject ?? DEFAULT_SUBJECT;
    let nc: NatsConnection;
    try {
      nc = await connectNats(options.servers, options.security);
    } catch (error) {
      throw new LogUnavailableError(`cannot connect to NATS at ${options.servers}`, { cause: error });
    }
    try {
      const jsm = await whileElecting(() => jetstreamManager(nc));
      await whileElecting(() =>
        ensureStream(jsm, stream, subject, { replicas: options.replicas ?? 1, maxAgeMs: options.maxAgeMs ?? 0, maxBytes: options.maxBytes ?? -1 }),
      );
      await startAbove(jsm, stream, options);
      const timeout = options.publishTimeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS;
      return new JetStreamLog(nc, jetstream(nc), jsm, stream, subject, timeout);
    } catch (error) {
      await nc.close();
      if (error instanceof LogBehindError) throw error;
      throw new LogUnavailableError(`cannot set up JetStream stream ${stream}`, { cause: error });
    }
  }

  async write(recordId: string, payload: Uint8Array, org?: string): Promise<WriteResult> {
    if (!this.isAvailable()) throw new LogUnavailableError('NATS is not connected');
    try {
      const ack = await Promise.race([
        // Slugs match ^[a-z][a-z0-9_]{1,39}$: one subject token, never a wildcard.
        this.js.publish(org === undefined ? this.subject : `${this.subject}.${org}`, payload, {
          msgID: recordId,
          timeout: this.publishTimeoutMs,
          // Refuses the write if some other stream has taken over the subject.
          expect: { streamName: this.stream },
        }),
        this.dropped.promise,
      ]);
      return { seq: ack.seq, duplicate: ack.duplicate };
    } catch (error) {
      if (refusedByServer(error)) throw new LogUnavailableError('JetStream refused the publish', { cause: error });
      // Sent, then no ack in time or the connection dropped while waiting: the server may have stored it
      // (a frozen server stores what sits in its socket buffer once it runs again).
      throw new LogOutcomeUnknownError('JetStream did not acknowledge the publish', { cause: error });
    }
  }

  async openReader(afterSeq: number): Promise<LogReader> {
    return new JetStreamReader(
      { nc: this.nc, js: this.js, jsm: this.jsm, stream: this.stream, subject: this.subject, log: this },
      afterSeq,
    );
  }

  async headSeq(): Promise<number> {
    if (!this.isAvailable()) throw new LogUnavailableError('NATS is not connected');
    try {
      return (await this.jsm.streams.info(this.stream)).state.last_seq;
    } catch (error) {
      throw new LogUnavailableError('JetStream stream info failed', { cause: error });
    }
  }

  isAvailable(): boolean {
    return this.connected && !this.closing && !this.nc.isClosed();
  }

  /**
   * Connected is not enough: a stopped (SIGSTOP) or wedged server keeps the TCP connection open and
   * the client connected for minutes. A PING the server answers is. The caller bounds the wait.
   */
  async health(): Promise<LogHealth> {
    if (this.closing || this.nc.isClosed()) return { ok: false, reason: 'the NATS connection is closed', fatal: true };
    if (!this.connected) return { ok: false, reason: 'NATS is not connected (reconnecting)', fatal: false };
    this.ping ??= this.nc.rtt().finally(() => {
      this.ping = undefined;
    });
    try {
      await this.ping;
      return { ok: true };
    } catch (error) {
      return { ok: false, reason: `NATS did not answer a ping: ${(error as Error).message}`, fatal: false };
    }
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    // Drain lets in-flight requests finish; bounded, since a server that just vanished never answers it.
    if (this.connected) await Promise.race([this.nc.drain().catch(() => {}), delay(DRAIN_TIMEOUT_MS)]);
    if (!this.nc.isClosed()) await this.nc.close();
  }

  private async watchStatus(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === 'disconnect') {
        this.connected = false;
        this.dropped.fail(new Error('NATS connection lost'));
      } else if (status.type === 'reconnect') {
        this.dropped = connectionDrop();
        this.connected = true;
      }
    }
  }
}

/**
 * The stream takes `<subject>` (records written before subjects per org, still read) and `<subject>.>`;
 * a stream from before gains the second at start, and the configured limits (NATS_STREAM_MAX_AGE,
 * NATS_STREAM_MAX_BYTES). Replicas are set when the stream is created only: changing them is an
 * operator's move (`nats stream edit`), not something a restart should do.
 */
async function ensureStream(jsm: JetStreamManager, name: string, subject: string, limits: { replicas: number; maxAgeMs: number; maxBytes: number }): Promise<void> {
  const subjects = [subject, `${subject}.>`];
  const max_age = nanos(limits.maxAgeMs);
  const max_bytes = limits.maxBytes;
  try {
    const { config } = await jsm.streams.info(name);
    if (!subjects.every((s) => config.subjects?.includes(s)) || config.max_age !== max_age || config.max_bytes !== max_bytes) {
      await jsm.streams.update(name, { ...config, subjects: [...new Set([...(config.subjects ?? []), ...subjects])], max_age, max_bytes });
    }
    return;
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
  }
  try {
    await jsm.streams.add({ name, subjects, storage: StorageType.File, duplicate_window: DUPLICATE_WINDOW_NS, num_replicas: limits.replicas, max_age, max_bytes });
  } catch (error) {
    // Another instance may have created it between our info and add; then it exists and all is well.
    await jsm.streams.info(name).catch(() => Promise.reject(error));
  }
}

/**
 * A stream behind the mark continues above it: purging an empty stream up to `highWater + 1` makes that
 * its next sequence (nats-server 2.9 keeps it across restarts, kill -9 included). A stream that already
 * holds records below the mark (a collector wrote to the recreated stream before this process started)
 * cannot be renumbered without deleting them: the start is refused, saying what to do.
 */
async function startAbove(jsm: JetStreamManager, stream: string, options: JetStreamLogOptions): Promise<void> {
  const highWater = options.highWater ?? 0;
  if (highWater === 0) return;
  const { state } = await jsm.streams.info(stream);
  if (state.last_seq >= highWater) return;
  if (state.messages > 0) {
    throw new LogBehindError(
      `JetStream stream ${stream} ends at sequence ${state.last_seq} (${state.messages} records), below position ${highWater} that this process's org databases may hold: ` +
        `it was deleted and recreated, and records written to it since would be skipped. Stop the collectors, purge it to start above the mark ` +
        `(nats stream purge ${stream} --seq ${highWater + 1}: its ${state.messages} records are lost), then start the storage processes before the collectors`,
    );
  }
  await jsm.streams.purge(stream, { seq: highWater + 1 });
  options.onBehind?.({ headSeq: state.last_seq, highWater, compactedSeq: options.compactedSeq ?? 0 });
}

/** An answer from the server that says the message was not stored: an API error, or no stream listening. */
function refusedByServer(error: unknown): boolean {
  return error instanceof JetStreamApiError || (error instanceof Error && error.name === 'JetStreamNotEnabled');
}

function nanos(ms: number): number {
  return ms * 1_000_000;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function connectionDrop(): { promise: Promise<never>; fail: (error: Error) => void } {
  let fail: (error: Error) => void = () => {};
  const promise = new Promise<never>((_, reject) => (fail = reject));
  promise.catch(() => {}); // observed through Promise.race only; never an unhandled rejection
  return { promise, fail };
}

/** The event stream as configured: publish timeout, replicas, limits, credentials and TLS. */
export function jetStreamOptions(config: Config): Omit<JetStreamLogOptions, 'servers'> {
  return {
    publishTimeoutMs: config.natsPublishTimeoutMs,
    replicas: config.natsStreamReplicas,
    maxAgeMs: config.natsStreamMaxAgeMs,
    maxBytes: config.natsStreamMaxBytes,
    security: natsSecurity(config),
  };
}
