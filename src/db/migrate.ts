/** Applies pipelines/storage.sql (idempotent DDL) at start. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipelinesDir } from '../paths.js';
import type { Database } from './database.js';

export async function migrate(db: Database): Promise<void> {
  const ddl = readFileSync(join(pipelinesDir, 'storage.sql'), 'utf8');
  await db.exclusive(async (c) => {
    await c.run(ddl);
  });
}
