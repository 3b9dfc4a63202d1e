/**
 * The schema of an org's database file: its tables, the profile macros over them and the two views its
 * trigger SQL reads, applied (all idempotent) in one transaction when the file is opened, then whatever is
 * not folded into the per-contact aggregates yet is folded.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipelinesDir } from '../core/paths.js';
import { foldContactActivity } from '../events/compaction/fold-contact-activity.js';
import { foldEventTypes } from '../events/compaction/fold-event-types.js';
import type { Database } from '../db/sql.js';
import { makeProfilesView } from '../events/profiles/profiles-view.js';

/** The statements of an org's database schema, in order: tables, then the macros and views over them. */
export function orgSchemaSql(): string[] {
  return ['storage.sql', 'profiles.sql', 'org_relations.sql'].map((file) => readFileSync(join(pipelinesDir, file), 'utf8'));
}

/** What of an org's settings its data needs (the control plane has them all). */
export interface OrgSettings {
  slug: string;
  currencySymbol: string;
}

export async function applyOrgSchema(db: Database): Promise<void> {
  await db.transaction(async (c) => {
    for (const sql of orgSchemaSql()) await c.run(sql);
    await makeProfilesView(c);
    // Whatever is not folded yet (a store from before the aggregates, events loaded in bulk) is folded
    // now, so the first profile computations and event type lists after opening do not each read it.
    await foldContactActivity(c);
    await foldEventTypes(c);
  });
}

/** The settings the org's profiles read, copied from the control plane. */
export async function writeOrgSettings(db: Database, org: OrgSettings): Promise<void> {
  await db.run('INSERT OR REPLACE INTO org_settings VALUES ($1, $2)', [org.slug, org.currencySymbol]);
}
