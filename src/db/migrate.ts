/**
 * Applies the storage tables, then the views over them, then each org's trigger relations (all idempotent) at start,
 * in one transaction, and folds unfolded events into the per-contact aggregates.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipelinesDir } from '../paths.js';
import { foldContactActivity } from '../compaction/fold-contact-activity.js';
import { ensureOrgRelations } from '../triggers/org-relations.js';
import { type Database } from './database.js';

export async function migrate(db: Database): Promise<void> {
  await db.transaction(async (c) => {
    for (const file of ['storage.sql', 'profiles.sql']) await c.run(readFileSync(join(pipelinesDir, file), 'utf8'));
    // Whatever is not folded yet (a store from before the aggregates, events loaded in bulk) is folded
    // now, so the first profile computations after start do not each read it.
    await foldContactActivity(c);
    for (const { slug } of await c.all<{ slug: string }>('SELECT slug FROM orgs')) await ensureOrgRelations(c, slug);
  });
}
