/**
 * A cursor over the JetStream log, on an ordered (ephemeral, unacked) consumer.
 *
 * nats.js `fetch` only returns once `max_messages` arrived or `expires` (at least 1 s) ran out, so a
 * fetch for more than is stored stalls. The reader therefore asks the stream how many records lie past
 * its cursor and fetches exactly that many. When there are none it waits on a plain core subscription
 * to the subject, which sees every publish: no polling delay, and `waitMs` is honoured even below 1 s.
 */
import type { Consumer, JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { AppendSignal } from './append-signal.js';
import { type EmptyRange, LogUnavailableError, type LogReader, type StoredRecord } from './types.js';

/** Only a backstop: a fetch asks for records already stored, so it normally ends long before this. */
const FETCH_EXPIRES_MS = 2_000;
/**
 * A fetch still open this long after its expiry is abandoned. nats.js keeps an ordered consumer's fetch
 * open across missed heartbeats and retries its consumer-info check without end, so a fetch whose
 * consumer sat on a nats-server that was killed can wait forever; a new consumer at the cursor cannot.
 */
const FETCH_DEADLINE_MS = FETCH_EXPIRES_MS + 3_000;
/** Re-check while waiting: covers being disconnected and a publish that is seen before it is stored. */
const RECHECK_MS = 200;
/** Re-check soon after a publish was seen but not yet counted by the stream. */
const WOKEN_RECHECK_MS = 5;

export interface JetStreamReaderDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  stream: string;
  subject: string;
  log: { isAvailable(): boolean };
}

export class JetStreamReader implements LogReader {
  private consumer: Consumer | undefined;
  private closed = false;
  /** An ordered consumer allows one fetch at a time: reads queue behind each other. */
  private queue: Promise<unknown> = Promise.resolve();
  private passed: EmptyRange[] = [];

  constructor(
    private readonly deps: JetStreamReaderDeps,
    /** Every position up to here is read: the last record handed out, or an empty stream's last seq. */
    private at: number,
  ) {}

  get position(): number {
    return this.at;
  }

  get skipped(): readonly EmptyRange[] {
    return this.passed;
  }

  read(max: number, waitMs: number): Promise<StoredRecord[]> {
    if (this.closed) return Promise.reject(new Error('log reader is closed'));
    const result = this.queue.then(() => this.readNow(max, waitMs));
    this.queue = result.catch(() => {});
    return result;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    this.dropConsumer();
  }

  private async readNow(max: number, waitMs: number): Promise<StoredRecord[]> {
    this.passed = [];
    if (max <= 0) return [];
    const deadline = Date.now() + waitMs;
    const appended = new AppendSignal();
    let watch: Subscription | undefined;
    let legacy: Subscription | undefined;
    let woken = false;
    try {
      for (;;) {
        const seen = appended.current;
        if (this.deps.log.isAvailable()) {
          const pending = await this.pending();
          if (pending > 0) return await this.fetch(Math.min(max, pending));
        }
        const left = deadline - Date.now();
        if (left <= 0) return [];
        if (watch === undefined && this.deps.log.isAvailable()) {
          watch = this.deps.nc.subscribe(`${this.deps.subject}.>`, { callback: () => appended.notify() });
          legacy = this.deps.nc.subscribe(this.deps.subject, { callback: () => appended.notify() });
          // Once the server has the subscription, count again: a publish just before it is not lost.
          await this.deps.nc.flush();
          continue;
        }
        await appended.wait(seen, Math.min(left, woken ? WOKEN_RECHECK_MS : RECHECK_MS));
        woken = appended.current !== seen;
      }
    } catch (error) {
      if (error instanceof LogUnavailableError) throw error;
      throw new LogUnavailableError('JetStream read failed', { cause: error });
    } finally {
      watch?.unsubscribe();
      legacy?.unsubscribe();
    }
  }

  /**
   * Records stored past the cursor. Positions below the stream's first seq were removed (its age or size
   * limit, a purge), and an empty stream holds nothing up to its last seq (purged to start above the
   * high-water mark: jetstream-log.ts): the cursor passes them, saying so in `skipped`.
   */
  private async pending(): Promise<number> {
    const { first_seq, last_seq } = (await this.deps.jsm.streams.info(this.deps.stream)).state;
    const removed = Math.min(first_seq - 1, last_seq);
    if (removed > this.at) {
      this.passed.push({ from: this.at + 1, to: removed, kind: 'released' });
      this.at = removed;
    }
    return last_seq - this.at;
  }

  private async fetch(count: number): Promise<StoredRecord[]> {
    try {
      const records = await this.fetchOnce(count);
      // The stream holds them, yet the consumer delivered none: it is stuck (its server changed or
      // restarted); the next read asks a new one.
      if (records.length === 0) this.dropConsumer();
      return records;
    } catch {
      // The ephemeral consumer may be gone (NATS restart, inactivity): start a new one at the cursor.
      this.dropConsumer();
      try {
        return await this.fetchOnce(count);
      } catch (error) {
        this.dropConsumer();
        throw new LogUnavailableError('JetStream fetch failed', { cause: error });
      }
    }
  }

  private async fetchOnce(count: number): Promise<StoredRecord[]> {
    this.consumer ??= await this.deps.js.consumers.get(this.deps.stream, { opt_start_seq: this.at + 1 });
    const messages = await this.consumer.fetch({ max_messages: count, expires: FETCH_EXPIRES_MS });
    const deadline = setTimeout(() => messages.stop(new Error(`fetch still open ${FETCH_DEADLINE_MS} ms after it began`)), FETCH_DEADLINE_MS);
    const records: StoredRecord[] = [];
    const prefix = `${this.deps.subject}.`;
    try {
      for await (const message of messages) {
        const org = message.subject.startsWith(prefix) ? message.subject.slice(prefix.length) : undefined;
        records.push(org === undefined ? { seq: message.seq, payload: message.data } : { seq: message.seq, payload: message.data, org });
      }
    } finally {
      clearTimeout(deadline);
    }
    // Only now: a fetch that failed halfway is retried from the old cursor, so nothing is skipped.
    // Seqs missing before the first record went from the front since `pending` looked (limits); between
    // records, a deleted org's subject was purged.
    let expected = this.at + 1;
    for (const [i, { seq }] of records.entries()) {
      if (seq > expected) this.passed.push({ from: expected, to: seq - 1, kind: i === 0 ? 'released' : 'gap' });
      expected = seq + 1;
    }
    if (records.length > 0) this.at = records[records.length - 1]!.seq;
    return records;
  }

  private dropConsumer(): void {
    const consumer = this.consumer;
    this.consumer = undefined;
    if (consumer && this.deps.log.isAvailable()) consumer.delete().catch(() => {});
  }
}
