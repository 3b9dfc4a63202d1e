/** Applies the storage tables, then the views over them (both idempotent) at start. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipelinesDir } from '../paths.js';
import type { Database } from './database.js';

export async function migrate(db: Database): Promise<void> {
  await db.exclusive(async (c) => {
    for (const file of ['storage.sql', 'profiles.sql']) await c.run(readFileSync(join(pipelinesDir, file), 'utf8'));
  });
}
