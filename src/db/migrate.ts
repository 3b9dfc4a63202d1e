/** Applies the storage tables, then the views over them, then each org's trigger relations (all idempotent) at start. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipelinesDir } from '../paths.js';
import { ensureOrgRelations } from '../triggers/org-relations.js';
import { type Database } from './database.js';

export async function migrate(db: Database): Promise<void> {
  await db.exclusive(async (c) => {
    for (const file of ['storage.sql', 'profiles.sql']) await c.run(readFileSync(join(pipelinesDir, file), 'utf8'));
    for (const { slug } of await c.all<{ slug: string }>('SELECT slug FROM orgs')) await ensureOrgRelations(c, slug);
  });
}
