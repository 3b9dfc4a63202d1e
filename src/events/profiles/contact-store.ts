/**
 * Upserts imported contacts by normalised e-mail in one transaction (nothing half-imported).
 * A column left empty keeps the stored value; custom columns merge into the stored ones. A suppressed
 * contact (an erasure with suppress) is not imported again. An erasure deletes a contact's row.
 */
import type { Context } from '../../core/context.js';
import { tsParam } from '../../db/database.js';
import type { OrgStorage } from '../../db/org-storage.js';
import type { Sql } from '../../db/sql.js';
import { SUPPRESSED_HASHES } from '../compaction/tombstones.js';
import { CONTACT_COLUMNS, type ContactRow } from './parse-contacts.js';
import { addProfileColumns } from './profiles-view.js';

export class ContactStore {
  constructor(
    private readonly orgs: OrgStorage,
    private readonly ctx: Context,
  ) {}

  async upsert(org: string, rows: ContactRow[]): Promise<void> {
    // Later lines win over earlier lines for the same e-mail (one row per key in one INSERT).
    const latest = new Map(rows.map((r) => [r.email, r]));
    const now = tsParam(this.ctx.clock.now());
    await this.orgs.org(org).transaction(async (c) => {
      await c.run(`CREATE OR REPLACE TEMP TABLE contact_import AS SELECT * FROM contacts LIMIT 0`);
      await c.appendRows({ table: 'contact_import', catalog: 'temp' }, [...latest.values()], (a, row) => {
        a.appendVarchar(org);
        a.appendVarchar(row.email);
        for (const column of CONTACT_COLUMNS) {
          const value = row.columns[column];
          if (value === undefined) a.appendNull();
          else a.appendVarchar(value);
        }
        a.appendVarchar(JSON.stringify(row.custom));
        a.appendTimestampTZ(now);
      });
      const keep = CONTACT_COLUMNS.map((col) => `${col} = coalesce(excluded.${col}, contacts.${col})`).join(', ');
      await c.run(
        `INSERT INTO contacts SELECT * FROM contact_import
          WHERE sha256(email) NOT IN (${SUPPRESSED_HASHES})
         ON CONFLICT (org, email) DO UPDATE SET ${keep},
           custom = json_merge_patch(contacts.custom, excluded.custom), updated_at = excluded.updated_at`,
      );
      await c.run('DROP TABLE contact_import');
      // Each custom column is a column of `profiles` in trigger and segment SQL.
      await addProfileColumns(c, [...new Set(rows.flatMap((r) => Object.keys(r.custom)))]);
    });
  }

  /** An erased contact's imported row goes, in the erasure's transaction (privacy/erasure.ts). */
  static async eraseContact(c: Sql, email: string): Promise<number> {
    return (await c.all('DELETE FROM contacts WHERE email = $1 RETURNING 1', [email])).length;
  }
}
