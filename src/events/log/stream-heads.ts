/**
 * The newest acknowledged event of an org, for a process that acknowledges none itself (an `api`
 * process beside separate collectors, NATS mode): the time JetStream stored the last record on the
 * org's subject — a record is acknowledged once stored. Asked in the background, at most every
 * ASK_EVERY_MS per org and only for orgs whose lag is wanted, so a lookup never waits for NATS; it reads
 * the answer of the previous ask. JetStream's clock stamps the record and the collector's its events:
 * on separate machines their skew (NTP: milliseconds) is in the lag.
 */
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { DEFAULT_STREAM, DEFAULT_SUBJECT } from './jetstream-log.js';

/** A lookup's lag may be this much older than the stream: well under the refresh pacing it reports on. */
const ASK_EVERY_MS = 200;

export class StreamHeads {
  /** Per org, when it was last asked (performance.now()). */
  private readonly asked = new Map<string, number>();
  private jsm: Promise<JetStreamManager> | undefined;

  constructor(
    private readonly nc: NatsConnection,
    /** The org's newest record was stored at `storedAt` (epoch ms). */
    private readonly told: (org: string, storedAt: number) => void,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** The org's lag is wanted: ask for its newest record if the last ask is older than ASK_EVERY_MS. */
  want(org: string): void {
    const now = performance.now();
    const last = this.asked.get(org);
    if (last !== undefined && now - last < ASK_EVERY_MS) return;
    // A failed ask is asked again no sooner than an answered one: NATS down costs a lookup nothing more.
    this.asked.set(org, now);
    void this.ask(org).catch(this.onError);
  }

  private async ask(org: string): Promise<void> {
    // Made again after a failure (NATS away at the first ask), not kept failed for good.
    this.jsm ??= jetstreamManager(this.nc).catch((error: unknown) => {
      this.jsm = undefined;
      throw error;
    });
    const jsm = await this.jsm;
    // null: no record of the org yet, so nothing acknowledged and no lag.
    const newest = await jsm.streams.getMessage(DEFAULT_STREAM, { last_by_subj: `${DEFAULT_SUBJECT}.${org}` });
    if (newest) this.told(org, newest.time.getTime());
  }
}
