/**
 * The admin key: ADMIN_KEY, or generated on first start into DATA_DIR/admin.key (mode 0600).
 * Only its hash stays in memory; the key itself is never logged.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Context } from '../core/context.js';
import { randomBase62, sha256Hex } from '../core/secrets.js';

export interface AdminKey {
  hash: string;
  /** Where a generated key was stored (undefined when ADMIN_KEY was given). */
  file?: string;
  generated: boolean;
}

export function resolveAdminKey(adminKey: string | undefined, dataDir: string, ctx: Context): AdminKey {
  if (adminKey) return { hash: sha256Hex(adminKey), generated: false };
  const file = resolve(join(dataDir, 'admin.key'));
  if (existsSync(file)) return { hash: sha256Hex(readFileSync(file, 'utf8').trim()), file, generated: false };
  mkdirSync(dataDir, { recursive: true });
  const key = 'adm_' + randomBase62(ctx, 40);
  writeFileSync(file, key + '\n', { mode: 0o600, flag: 'wx' });
  return { hash: sha256Hex(key), file, generated: true };
}
