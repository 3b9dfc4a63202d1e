/**
 * The control plane in NATS mode: documents in a JetStream KV bucket, replicated like the event stream,
 * watched by every process, so a change made on any `api` process (a revoked token, a rotated secret) is
 * in force on all of them as soon as their watchers see it. Compare-and-set is KV's own: `create` with
 * no previous revision, `update` with the revision read.
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import type { KV, KvEntry } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { type NatsSecurity, connectNats, openBucket, whileElecting } from '../nats/nats-client.js';
import { followKv } from '../nats/follow-kv.js';
import { type ControlDocuments, type ControlEntry, ControlConflictError, ControlUnavailableError } from './types.js';

export interface KvDocumentsOptions {
  /** NATS server URL(s), comma-separated. */
  servers: string;
  security?: NatsSecurity;
  /** Default: `audience_control`. */
  bucket?: string;
  /** Copies of each document; the event stream's replicas (1 on a single server, 3 on a cluster). */
  replicas?: number;
  /** How long a read or write waits for the server. Default: 5000 (ms) */
  timeoutMs?: number;
}

export const DEFAULT_BUCKET = 'audience_control';
/** A few old versions help an operator see what changed; documents are small. */
const HISTORY = 5;
const DEFAULT_TIMEOUT_MS = 5_000;

export class KvDocuments implements ControlDocuments {
  readonly kind = 'kv';
  private readonly watchers: Array<{ stop(): void }> = [];

  private constructor(
    private readonly nc: NatsConnection,
    private readonly kv: KV,
  ) {}

  static async open(options: KvDocumentsOptions): Promise<KvDocuments> {
    let nc: NatsConnection;
    try {
      nc = await connectNats(options.servers, options.security);
    } catch (error) {
      throw new ControlUnavailableError(`cannot connect to NATS at ${options.servers}`, { cause: error });
    }
    try {
      const kv = await whileElecting(() => openBucket(nc, options.bucket ?? DEFAULT_BUCKET, { history: HISTORY, replicas: options.replicas ?? 1, timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS }));
      return new KvDocuments(nc, kv);
    } catch (error) {
      await nc.close();
      throw new ControlUnavailableError('cannot open the control plane KV bucket', { cause: error });
    }
  }

  async watch(onEntry: (entry: ControlEntry) => void): Promise<void> {
    const follower = await this.call(() =>
      whileElecting(() =>
        followKv(this.kv, (entry) => {
          if (entry.operation === 'PUT') onEntry(toEntry(entry));
        }),
      ),
    );
    this.watchers.push(follower);
  }

  async get(key: string): Promise<ControlEntry | undefined> {
    const entry = await this.call(() => this.kv.get(key));
    return entry && entry.operation === 'PUT' ? toEntry(entry) : undefined;
  }

  async list(): Promise<ControlEntry[]> {
    return this.call(async () => {
      const keys: string[] = [];
      for await (const key of await this.kv.keys()) keys.push(key);
      const entries: ControlEntry[] = [];
      for (const key of keys.sort()) {
        const entry = await this.kv.get(key);
        if (entry?.operation === 'PUT') entries.push(toEntry(entry));
      }
      return entries;
    });
  }

  async create(key: string, value: unknown): Promise<ControlEntry> {
    const revision = await this.call(() => this.kv.create(key, JSON.stringify(value)), key);
    return { key, value, revision };
  }

  async update(key: string, value: unknown, revision: number): Promise<ControlEntry> {
    const next = await this.call(() => this.kv.update(key, JSON.stringify(value), revision), key);
    return { key, value, revision: next };
  }

  async health(): Promise<{ ok: true } | { ok: false; reason: string; fatal: boolean }> {
    if (this.nc.isClosed()) return { ok: false, reason: 'the control plane NATS connection is closed', fatal: true };
    try {
      await this.nc.rtt();
      return { ok: true };
    } catch (error) {
      return { ok: false, reason: `NATS (control plane) did not answer a ping: ${(error as Error).message}`, fatal: false };
    }
  }

  async close(): Promise<void> {
    for (const watcher of this.watchers.splice(0)) watcher.stop();
    if (!this.nc.isClosed()) await this.nc.close();
  }

  /** Runs a KV call; a wrong-revision answer is a conflict, anything else means the server is out of reach. */
  private async call<T>(work: () => Promise<T>, key?: string): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (key !== undefined && error instanceof JetStreamApiError && isWrongRevision(error.code)) throw new ControlConflictError(key);
      throw new ControlUnavailableError('the control plane (NATS KV) did not answer', { cause: error });
    }
  }
}

function isWrongRevision(code: number): boolean {
  return code === JetStreamApiCodes.StreamWrongLastSequence || code === JetStreamApiCodes.StreamWrongLastSequenceUnknown;
}

function toEntry(entry: KvEntry): ControlEntry {
  return { key: entry.key, value: entry.json<unknown>(), revision: entry.revision };
}
