/**
 * Materializes rows of the profile view (pipelines/profiles.sql) into the serving index: everything at
 * start, then only the contacts a compaction batch, an import or a send touched. A contact touched only by
 * events that change no more than its first and last seen (most events: a page view, a custom event) and by
 * sends delivered or held out (campaigns received, memberships) has its indexed profile moved on instead,
 * with no query (issue 39, design 6).
 */
import { type DuckDBListValue, listValue } from '@duckdb/node-api';
import type { ContactTouch, SentTouch } from '../compaction/compaction.js';
import { foldedThrough } from '../compaction/fold-contact-activity.js';
import type { OrgStorage } from '../../db/org-storage.js';
import { YIELD_EVERY, yieldNow } from '../../db/yield-now.js';
import { type Profile, type ProfileIndex, emailHash } from './profile-index.js';
import { DESCRIBE_PROFILES, type ProfileChunk, type StoredProfile, parseProfiles, profileJsonSql, profileOfRow } from './profile-json.js';

export type ContactKey = ContactTouch;

/**
 * What a contact's profile moves on by: the receipts its first and last seen take in (±Infinity: none), the
 * flows it received and the memberships it joined. Undefined in a map of moves: its profile is computed again.
 */
interface Move {
  first: number;
  last: number;
  /** Made by the first send: most moves are receipts only. */
  sends?: { campaigns: Set<string>; memberships: Set<string> };
}

const NO_SENDS: NonNullable<Move['sends']> = { campaigns: new Set(), memberships: new Set() };

/** Every contact of an org (ProfileMaterializer.unsure). */
const ALL = 'all';

/** The profiles of some contacts of org $1 ($2, an e-mail list) at fold position $3, as a refresh reads them. */
export const PROFILES_OF = 'profiles_for($1::VARCHAR, $2::VARCHAR[], $3::TIMESTAMPTZ)';

/** Above this many contacts of one org, recomputing the whole org is cheaper than filtering. */
const WHOLE_ORG_THRESHOLD = 20_000;

/**
 * Contacts per query of a whole-org refresh. In one query a large org's profiles did not fit the org's
 * DuckDB memory (1M contacts with 3M orders, 1M sends and 1M traits: out of memory at 256 MiB, the default
 * share, and still at 1 GiB); a page's joins hold only its own contacts' rows.
 */
const ORG_PAGE = 20_000;

export class ProfileMaterializer {
  /** The packed read of profiles_for (undefined inside: its columns cannot all be read exactly as JSON). */
  private jsonSql: Promise<string | undefined> | undefined;
  /**
   * Per org, the contacts (or all of them) whose last computation failed: their indexed profiles may lack
   * more than a first and last seen, so they are computed again, not moved on, until one succeeds.
   */
  private readonly unsure = new Map<string, Set<string> | typeof ALL>();

  constructor(
    private readonly orgs: OrgStorage,
    readonly index: ProfileIndex,
    /** Also told of every profile (NATS mode: published for the `api` processes). */
    private readonly publish?: (org: string, profile: Profile, customFields: readonly string[]) => Promise<void>,
    /** Also told of every profile removed (NATS mode: removed from the feed, history included). */
    private readonly unpublish?: (org: string, hash: string) => Promise<void>,
  ) {}

  /** An erased contact's profile leaves the index (and the feed): the Audience API finds it no more. */
  async forget(org: string, email: string): Promise<void> {
    const hash = emailHash(email);
    const unsure = this.unsure.get(org);
    if (unsure instanceof Set) unsure.delete(email);
    this.index.removeHash(org, hash);
    await this.unpublish?.(org, hash);
  }

  /**
   * Every profile of the org (at start, and after a change of the settings its profiles show), a page of
   * contacts at a time: the org's contacts (contact_emails, pipelines/profiles.sql), then their profiles
   * ORG_PAGE at a time. A contact that appears after the list was read is refreshed by the compaction batch
   * that brought it.
   */
  async refreshOrg(org: string): Promise<void> {
    try {
      const emails = await this.orgs.org(org).exclusive(async (c) => {
        const rows = await c.all<{ email: string }>('SELECT email FROM contact_emails($1::TIMESTAMPTZ)', [await foldedThrough(c)]);
        return rows.map((row) => row.email);
      });
      for (let start = 0; start < emails.length; start += ORG_PAGE) {
        await this.store(await this.profilesFor(org, listValue(emails.slice(start, start + ORG_PAGE))));
      }
    } catch (error) {
      this.unsure.set(org, ALL);
      throw error;
    }
    this.unsure.delete(org);
  }

  /** Answers whether it read a database (a recompute); false when every contact was moved on in memory. */
  async refresh(keys: ContactKey[]): Promise<boolean> {
    const byOrg = new Map<string, Map<string, Move | undefined>>();
    for (const { org, email, seenAt, sent } of keys) {
      let contacts = byOrg.get(org);
      if (!contacts) byOrg.set(org, (contacts = new Map()));
      if (contacts.has(email) && contacts.get(email) === undefined) continue;
      if (seenAt === undefined && sent === undefined) {
        contacts.set(email, undefined);
        continue;
      }
      let move = contacts.get(email);
      if (!move) contacts.set(email, (move = { first: Infinity, last: -Infinity }));
      if (seenAt !== undefined) {
        move.first = Math.min(move.first, seenAt);
        move.last = Math.max(move.last, seenAt);
      }
      if (sent) joined(move, sent);
    }
    let read = false;
    for (const [org, contacts] of byOrg) {
      const recompute = await this.moveOn(org, contacts);
      read ||= recompute.length > 0;
      if (recompute.length > WHOLE_ORG_THRESHOLD) await this.refreshOrg(org);
      else if (recompute.length > 0) await this.recompute(org, recompute);
    }
    return read;
  }

  /**
   * Moves on the indexed profiles of the contacts touched only by events that change no more than their first
   * and last seen and by sends: the same values profiles_for gives (min and max of receipts; distinct flows
   * and memberships in order; combined in any order). Answers the e-mails whose profiles must be computed:
   * touched otherwise, not indexed, or unsure.
   */
  private async moveOn(org: string, contacts: Map<string, Move | undefined>): Promise<string[]> {
    const recompute: string[] = [];
    const moved: StoredProfile[] = [];
    let looked = 0;
    for (const [email, move] of contacts) {
      // ~2.5–5 µs a contact: a refresh of 20,000 would hold the thread 50–100 ms.
      if (++looked % YIELD_EVERY === 0) await yieldNow();
      const unsure = this.unsure.get(org);
      const indexed = move && unsure !== ALL && !unsure?.has(email) ? this.index.lookup(org, 'email', email) : undefined;
      if (!move || !indexed) recompute.push(email);
      else {
        // Only seen (a move without sends had a receipt), and not published: taken in without a copy of the profile (IndexedProfile.see).
        if (!move.sends && !this.publish) {
          this.index.see(org, indexed, move.first, move.last);
          continue;
        }
        // Indexed in the step that read it: nothing can replace it in between.
        const profile = movedOn(indexed.profile, move);
        if (profile) this.index.upsert(org, profile, indexed.customFields);
        if (profile && this.publish) moved.push({ org, profile, customFields: indexed.customFields });
      }
    }
    for (const { profile, customFields } of moved) await this.publish?.(org, profile, customFields);
    return recompute;
  }

  private async recompute(org: string, emails: string[]): Promise<void> {
    try {
      await this.store(await this.profilesFor(org, listValue(emails)));
    } catch (error) {
      const unsure = this.unsure.get(org) ?? new Set<string>();
      if (unsure !== ALL) for (const email of emails) unsure.add(email);
      this.unsure.set(org, unsure);
      throw error;
    }
    const unsure = this.unsure.get(org);
    if (unsure instanceof Set) {
      for (const email of emails) unsure.delete(email);
      if (unsure.size === 0) this.unsure.delete(org);
    }
  }

  /**
   * The profiles of profiles_for, read as JSON text (profile-json.ts) or, when that cannot be exact, as
   * values. The fold position is read in the same session, so no fold runs in between.
   */
  private profilesFor(org: string, emails: DuckDBListValue): Promise<StoredProfile[]> {
    return this.orgs.org(org).exclusive(async (c) => {
      const params = [org, emails, await foldedThrough(c)];
      // The same macro in every org's file: described once.
      this.jsonSql ??= c.all<{ column_name: string; column_type: string }>(DESCRIBE_PROFILES).then(
        (columns) => profileJsonSql(columns, PROFILES_OF),
        (error: unknown) => {
          this.jsonSql = undefined;
          throw error;
        },
      );
      const sql = await this.jsonSql;
      const profiles = sql === undefined ? undefined : parseProfiles(await c.all<ProfileChunk>(sql, params));
      return profiles ?? (await c.all(`SELECT * FROM ${PROFILES_OF}`, params)).map(profileOfRow);
    });
  }

  /** Yields now and then: a refresh of a whole org (or of a backlog's contacts) must not stall lookups. */
  private async store(profiles: StoredProfile[]): Promise<void> {
    let stored = 0;
    for (const { org, profile, customFields } of profiles) {
      this.index.upsert(org, profile, customFields);
      if (this.publish) await this.publish(org, profile, customFields);
      if (++stored % YIELD_EVERY === 0) await yieldNow();
    }
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

/** As profiles.sql's sends: a delivered send's flow is a campaign received; either is a membership (its variant's, in an experiment). */
function joined(move: Move, sent: SentTouch): void {
  const sends = (move.sends ??= { campaigns: new Set(), memberships: new Set() });
  if (sent.delivered) sends.campaigns.add(sent.flowId);
  sends.memberships.add(sent.variant === null ? sent.flowId : `${sent.flowId}-${sent.variant}`);
}

/** The profile with `move` taken in; undefined when it already had. */
function movedOn(profile: Profile, move: Move): Profile | undefined {
  const first = typeof profile.first_seen_at === 'string' ? Date.parse(profile.first_seen_at) : Infinity;
  const last = typeof profile.last_seen_at === 'string' ? Date.parse(profile.last_seen_at) : -Infinity;
  const changes: Record<string, unknown> = {};
  if (move.first < first) changes.first_seen_at = iso(move.first);
  if (move.last > last) changes.last_seen_at = iso(move.last);
  const { campaigns: flows, memberships: joinedAs } = move.sends ?? NO_SENDS;
  const campaigns = union(profile.campaigns_received, flows);
  if (campaigns) changes.campaigns_received = campaigns;
  const memberships = union(profile.flow_variant_membership, joinedAs);
  if (memberships) changes.flow_variant_membership = memberships;
  return Object.keys(changes).length === 0 ? undefined : Object.freeze({ ...profile, ...changes });
}

/**
 * The list with `added` in, distinct and in order (list(DISTINCT … ORDER BY …): flow ids and variant
 * names are ASCII, schemas/flow.schema.json, so code-unit order is DuckDB's byte order); undefined when
 * nothing is new.
 */
function union(list: unknown, added: Set<string>): string[] | undefined {
  const held = Array.isArray(list) ? (list as string[]) : [];
  const fresh = [...added].filter((value) => !held.includes(value));
  return fresh.length === 0 ? undefined : [...held, ...fresh].sort();
}
