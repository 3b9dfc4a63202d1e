/**
 * Materializes rows of the profile view (pipelines/profiles.sql) into the serving index: everything at
 * start, then only the contacts a compaction batch, an import or a send touched.
 */
import { type DuckDBListValue, listValue } from '@duckdb/node-api';
import { foldedThrough } from '../compaction/fold-contact-activity.js';
import type { OrgStorage } from '../../db/org-storage.js';
import { YIELD_EVERY, yieldNow } from '../../db/yield-now.js';
import { type Profile, type ProfileIndex, emailHash } from './profile-index.js';

export interface ContactKey {
  org: string;
  email: string;
}

/** Above this many contacts of one org, recomputing the whole org is cheaper than filtering. */
const WHOLE_ORG_THRESHOLD = 20_000;

export class ProfileMaterializer {
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

  /** Every profile of the org (at start, and after a change of the settings its profiles show). */
  async refreshOrg(org: string): Promise<void> {
    await this.store(await this.profilesFor(org, null));
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

  /** Rows of profiles_for; the fold position is read in the same session, so no fold runs in between. */
  private profilesFor(org: string, emails: DuckDBListValue | null): Promise<Record<string, unknown>[]> {
    return this.orgs.org(org).exclusive(async (c) =>
      c.all('SELECT * FROM profiles_for($1::VARCHAR, $2::VARCHAR[], $3::TIMESTAMPTZ)', [org, emails, await foldedThrough(c)]),
    );
  }

  /** Yields now and then: a refresh of a whole org (or of a backlog's contacts) must not stall lookups. */
  private async store(rows: Record<string, unknown>[]): Promise<void> {
    let stored = 0;
    for (const row of rows) {
      const { org, custom_fields: custom, ...fields } = row;
      const customFields = typeof custom === 'string' ? (JSON.parse(custom) as Record<string, unknown>) : {};
      const profile = toProfile(fields, customFields);
      this.index.upsert(org as string, profile, Object.keys(customFields));
      if (this.publish) await this.publish(org as string, profile, Object.keys(customFields));
      if (++stored % YIELD_EVERY === 0) await yieldNow();
    }
  }
}

/** DuckDB values → JSON-ready values: BIGINT → number, TIMESTAMPTZ → ISO string. */
function toProfile(fields: Record<string, unknown>, custom: Record<string, unknown>): Profile {
  const profile: Record<string, unknown> = { ...custom };
  for (const [key, value] of Object.entries(fields)) {
    profile[key] = typeof value === 'bigint' ? Number(value) : value instanceof Date ? value.toISOString() : value;
  }
  return Object.freeze(profile);
}
