/**
 * The view `profiles` that trigger and segment SQL reads (pipelines/org_relations.sql), with each custom
 * column an import brought (`tier`) as a column of its own, as text: `WHERE tier = 'platinum'` runs, as
 * the profile served by the Audience API has it as a field. The names are kept in the org's table
 * profile_columns (added to by each import), so opening an org reads a few names, not its contacts; the
 * SQL checker is given them with each check (they are the serving index's custom fields of the org). A
 * name that is already a column of the profile (`timezone`, `order_count`) keeps the profile's own.
 * A trait written in SQL (reactions/triggers/trait-values.ts) is a custom field too, and a column of its value's type
 * (trait_types), so `WHERE lifetime_orders > 3` compares numbers.
 */
import { listValue } from '@duckdb/node-api';
import type { Sql } from '../../db/sql.js';
import { DESCRIBE_PROFILES } from './profile-json.js';

/** Custom column names as imports accept them (parse-contacts.ts): safe as identifiers, quoted all the same. */
const COLUMN_NAME = /^[a-z][a-z0-9_]{0,63}$/;

export type ColumnType = 'VARCHAR' | 'DOUBLE' | 'BOOLEAN';
export interface ProfileColumn {
  name: string;
  type: ColumnType;
}

/** Imported columns are text; a trait's column has its value's type. */
export function profileColumns(customFields: Iterable<string>, traitTypes: ReadonlyMap<string, ColumnType>): ProfileColumn[] {
  const names = new Set([...customFields, ...traitTypes.keys()]);
  return [...names].sort().map((name) => ({ name, type: traitTypes.get(name) ?? 'VARCHAR' }));
}

/**
 * Makes `profiles` with these custom columns (default: the org's, from profile_columns and trait_types),
 * leaving out any that is a column of the profile already.
 */
export async function makeProfilesView(c: Sql, given?: readonly ProfileColumn[]): Promise<void> {
  const own = new Set((await c.all<{ column_name: string }>(`SELECT column_name FROM (${DESCRIBE_PROFILES})`)).map((r) => r.column_name));
  const columns = (given ?? (await storedColumns(c))).filter(({ name }) => COLUMN_NAME.test(name) && !own.has(name));
  const extra = columns.map(({ name, type }) => `, ${columnOf(name, type)} AS "${name}"`).join('');
  await c.run(`CREATE OR REPLACE VIEW profiles AS SELECT * EXCLUDE (org)${extra} FROM profiles_for(NULL::VARCHAR, NULL::VARCHAR[], folded_through())`);
}

/** Records an import's custom column names; the view is made again when one is new. */
export async function addProfileColumns(c: Sql, names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  // RETURNING gives the rows inserted, not those ignored: the new names.
  const added = await c.all('INSERT OR IGNORE INTO profile_columns SELECT unnest($1::VARCHAR[]) RETURNING name', [listValue([...names])]);
  if (added.length > 0) await makeProfilesView(c);
}

function columnOf(name: string, type: ColumnType): string {
  if (type === 'VARCHAR') return `json_extract_string(custom_fields, '$."${name}"')`;
  return `TRY_CAST(json_extract(custom_fields, '$."${name}"') AS ${type === 'DOUBLE' ? 'DOUBLE' : 'BOOLEAN'})`;
}

async function storedColumns(c: Sql): Promise<ProfileColumn[]> {
  const types = new Map((await c.all<{ name: string; type: ColumnType }>('SELECT name, type FROM trait_types')).map((r) => [r.name, r.type]));
  return profileColumns(await storedNames(c), types);
}

/** The org's names; a database from before the table gets every key its contacts hold, once. */
async function storedNames(c: Sql): Promise<string[]> {
  await c.run(
    `INSERT OR IGNORE INTO profile_columns
     SELECT DISTINCT unnest(json_keys(custom)) FROM contacts
      WHERE custom::VARCHAR <> '{}' AND NOT EXISTS (SELECT 1 FROM profile_columns)`,
  );
  return (await c.all<{ name: string }>('SELECT name FROM profile_columns')).map((r) => r.name);
}
