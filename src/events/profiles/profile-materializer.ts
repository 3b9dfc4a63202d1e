/**
 * Materializes rows of the profile view (pipelines/profiles.sql) into the serving index: everything at
 * start, then only the contacts a compaction batch, an import or a send touched.
 */
import { type DuckDBListValue, listValue } from '@duckdb/node-api';
import { foldedThrough } from '../compaction/fold-contact-activity.js';
import type { OrgStorage } from '../../db/org-storage.js';
import { YIELD_EVERY, yieldNow } from '../../db/yield-now.js';
import { type Profile, type ProfileIndex, emailHash } from './profile-index.js';
import { DESCRIBE_PROFILES, type ProfileChunk, type StoredProfile, parseProfiles, profileJsonSql, profileOfRow } from './profile-json.js';

export interface ContactKey {
  org: string;
  email: string;
}

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

  constructor(
    private readonly orgs: OrgStorage,
    readonly index: ProfileIndex,
    /** Also told of every profile (NATS mode: published for the `api` processes). */
    private readonly publish?: (org: string, profile: Profile, customFields: string[]) => Promise<void>,
    /** Also told of every profile removed (NATS mode: removed from the feed, history included). */
    private readonly unpublish?: (org: string, hash: string) => Promise<void>,
  ) {}

  /** An erased contact's profile leaves the index (and the feed): the Audience API finds it no more. */
  async forget(org: string, email: string): Promise<void> {
    const hash = emailHash(email);
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
    const emails = await this.orgs.org(org).exclusive(async (c) => {
      const rows = await c.all<{ email: string }>('SELECT email FROM contact_emails($1::TIMESTAMPTZ)', [await foldedThrough(c)]);
      return rows.map((row) => row.email);
    });
    for (let start = 0; start < emails.length; start += ORG_PAGE) {
      await this.store(await this.profilesFor(org, listValue(emails.slice(start, start + ORG_PAGE))));
    }
  }

  async refresh(keys: ContactKey[]): Promise<void> {
    const byOrg = new Map<string, Set<string>>();
    for (const k of keys) {
      const emails = byOrg.get(k.org) ?? new Set<string>();
      emails.add(k.email);
      byOrg.set(k.org, emails);
    }
    for (const [org, emails] of byOrg) {
      if (emails.size > WHOLE_ORG_THRESHOLD) {
        await this.refreshOrg(org);
        continue;
      }
      await this.store(await this.profilesFor(org, listValue([...emails])));
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
