/**
 * Applies the storage tables, then the views over them, then each org's part (all idempotent) at start,
 * in one transaction, and folds unfolded events into the per-contact aggregates.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipelinesDir } from '../paths.js';
import { foldContactActivity } from '../compaction/fold-contact-activity.js';
import { ensureOrgRelations } from '../triggers/org-relations.js';
import type { Database, Sql } from './sql.js';

/** What of an org's settings its data needs (the control plane has them all). */
export interface OrgSettings {
  slug: string;
  currencySymbol: string;
}

export async function migrate(db: Database, orgs: readonly OrgSettings[]): Promise<void> {
  await db.transaction(async (c) => {
    for (const file of ['storage.sql', 'profiles.sql']) await c.run(readFileSync(join(pipelinesDir, file), 'utf8'));
    // Whatever is not folded yet (a store from before the aggregates, events loaded in bulk) is folded
    // now, so the first profile computations after start do not each read it.
    await foldContactActivity(c);
    for (const org of orgs) await prepareOrg(c, org);
  });
}

/** An org's part of the data file: its trigger relations and the settings its profiles read. */
export async function prepareOrg(c: Sql, org: OrgSettings): Promise<void> {
  await ensureOrgRelations(c, org.slug);
  await c.run('INSERT OR REPLACE INTO org_settings VALUES ($1, $2)', [org.slug, org.currencySymbol]);
}
