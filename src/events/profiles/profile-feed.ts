/**
 * Profiles across processes (NATS mode): storage shards publish each profile they materialize to a KV
 * bucket keyed by org and e-mail hash, and `api` processes follow the bucket into their serving index. A
 * new replica loads every current profile from it at start, then each change as it is written. The
 * e-mail itself is only inside the value, never in a key (keys show up in NATS tooling and logs).
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { type NatsSecurity, connectNats, openBucket, whileElecting } from '../../nats/nats-client.js';
import { type KvFollower, followKv } from '../../nats/follow-kv.js';
import { type Profile, type ProfileIndex, emailHash } from './profile-index.js';

export interface ProfileFeedOptions {
  servers: string;
  security?: NatsSecurity;
  /** Default: `audience_profiles`. */
  bucket?: string;
  replicas: number;
}

/** One profile as published: the fields, and which of them are imported custom columns. */
interface FeedValue {
  profile: Profile;
  customFields: readonly string[];
}

export const DEFAULT_PROFILES_BUCKET = 'audience_profiles';
/**
 * The key beside an org's profiles (`<org>._folded`, never an e-mail hash: those are hex) holding the
 * receipt time of the org's newest event folded into them, so an `api` process can say how far behind
 * they are (freshness.ts).
 */
const FOLDED_KEY = '_folded';
/** Publishes of one refresh in flight at once: enough to pipeline, few enough to bound memory. */
const MAX_IN_FLIGHT = 256;

export class ProfileFeed {
  private readonly inFlight = new Set<Promise<unknown>>();
  private follower: KvFollower | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly kv: KV,
    private readonly bucket: string,
    private readonly onError: (error: unknown) => void,
  ) {}

  static async open(options: ProfileFeedOptions, onError: (error: unknown) => void): Promise<ProfileFeed> {
    const nc = await connectNats(options.servers, options.security);
    try {
      // One value per key: the newest profile is all a replica needs.
      const bucket = options.bucket ?? DEFAULT_PROFILES_BUCKET;
      const kv = await whileElecting(() => openBucket(nc, bucket, { history: 1, replicas: options.replicas }));
      return new ProfileFeed(nc, kv, bucket, onError);
    } catch (error) {
      await nc.close();
      throw error;
    }
  }

  /**
   * Queues the profile for publishing; resolves once few enough are in flight. A failed publish is
   * reported, not thrown: the shard republishes every profile it owns at its next start.
   */
  async publish(org: string, profile: Profile, customFields: readonly string[]): Promise<void> {
    const value: FeedValue = { profile, customFields };
    const put = this.kv.put(`${org}.${emailHash(profile.email_address as string)}`, JSON.stringify(value)).catch(this.onError);
    this.inFlight.add(put);
    void put.finally(() => this.inFlight.delete(put));
    if (this.inFlight.size >= MAX_IN_FLIGHT) await Promise.race(this.inFlight);
  }

  /** The org's profiles hold its events received up to `receivedAt` (epoch ms); a failed put is reported, the next refresh puts again. */
  publishFolded(org: string, receivedAt: number): void {
    const put = this.kv.put(`${org}.${FOLDED_KEY}`, String(receivedAt)).catch(this.onError);
    this.inFlight.add(put);
    void put.finally(() => this.inFlight.delete(put));
  }

  /** Removes one profile (an erased contact's) from the bucket, history included; followers drop it. */
  async remove(org: string, hash: string): Promise<void> {
    await this.flushed();
    await this.kv.purge(`${org}.${hash}`);
  }

  /** Removes a deleted org's profiles from the bucket: every key `<org>.*`, history included. */
  async purgeOrg(org: string): Promise<void> {
    await this.flushed();
    const jsm = await jetstreamManager(this.nc);
    await jsm.streams.purge(`KV_${this.bucket}`, { filter: `$KV.${this.bucket}.${org}.>` });
  }

  /** Waits for every queued publish. */
  async flushed(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  /**
   * Loads every profile into `index`, then follows changes; orgs for which `skip` is true are left out.
   * `folded` hears each org's newest folded receipt time (publishFolded).
   */
  async follow(index: ProfileIndex, skip: (org: string) => boolean, folded: (org: string, receivedAt: number) => void = () => {}): Promise<void> {
    this.follower = await whileElecting(() => followKv(
      this.kv,
      (entry) => {
        const dot = entry.key.indexOf('.');
        const org = entry.key.slice(0, dot);
        if (skip(org)) return;
        const rest = entry.key.slice(dot + 1);
        if (rest === FOLDED_KEY) {
          const at = Number(entry.string());
          if (entry.operation === 'PUT' && Number.isFinite(at)) folded(org, at);
          return;
        }
        if (entry.operation === 'DEL' || entry.operation === 'PURGE') return index.removeHash(org, rest);
        if (entry.operation !== 'PUT') return;
        const { profile, customFields } = entry.json<FeedValue>();
        index.upsert(org, Object.freeze(profile), customFields);
      },
      this.onError,
    ));
  }

  async close(): Promise<void> {
    await this.flushed();
    this.follower?.stop();
    if (!this.nc.isClosed()) await this.nc.close();
  }
}
