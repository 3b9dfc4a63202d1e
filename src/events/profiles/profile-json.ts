/**
 * A refresh's profile rows read as JSON text, a few strings per refresh (issue 39, design 6). Read as
 * values, each row of profiles_for cost the storage process a native call and a decode per value and a
 * structured clone per row over IPC (~22 % of its CPU under collect), and the main thread a conversion
 * per value. Here DuckDB writes each row as the JSON of the profile the index keeps (`[fields, custom, org]`,
 * timestamps as `toISOString` writes them), joins up to CHUNK_ROWS rows with SEPARATOR, and the main
 * thread splits and parses them.
 *
 * Exact or not at all: a column of a type whose JSON is not the value the row path gives (anything but
 * those in AS_JSON) leaves the SQL undefined, and a chunk that does not split into its count (a value
 * held SEPARATOR unescaped), does not parse (a non-finite DOUBLE is written `Infinity`), or whose custom
 * fields are not an object makes `parseProfiles` answer undefined: the caller then reads the rows as values.
 */
import type { Row } from '../../db/sql.js';
import type { Profile } from './profile-index.js';

/** Rows per string: far below V8's largest string (~512 M characters) even with 32 KB of custom fields each. */
const CHUNK_ROWS = 2048;
const SEPARATOR = '\u001e';

/** A profile as the index takes it, and the names of its custom fields. */
export interface StoredProfile {
  org: string;
  profile: Profile;
  customFields: readonly string[];
}

export interface ProfileChunk {
  n: number;
  packed: string | null;
}

/** profiles_for's columns and their types (DESCRIBE binds the macro, nothing runs). */
export const DESCRIBE_PROFILES = 'DESCRIBE SELECT * FROM profiles_for(NULL::VARCHAR, NULL::VARCHAR[], NULL::TIMESTAMPTZ)';

/**
 * Column types whose JSON, as DuckDB writes it, parses to the value the row path makes of them. Not JSON:
 * to_json embeds it as an object where the row path gives its text.
 */
const AS_JSON = new Set(['VARCHAR', 'VARCHAR[]', 'BIGINT', 'INTEGER', 'DOUBLE', 'BOOLEAN']);
const TIMESTAMPTZ = 'TIMESTAMP WITH TIME ZONE';

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;
const identifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * The packed read of `source` (a table expression with profiles_for's columns, `org` and `custom_fields`
 * among them) given its columns as DESCRIBE lists them; undefined when one cannot be written exactly.
 */
export function profileJsonSql(columns: ReadonlyArray<{ column_name: string; column_type: string }>, source: string): string | undefined {
  const fields: string[] = [];
  for (const { column_name: name, column_type: type } of columns) {
    if (name === 'org' || name === 'custom_fields') continue;
    const column = identifier(name);
    // Date#toISOString of the millisecond the row path's Date holds: the microseconds cut toward zero (before
    // 1970 too, where %g alone would floor). The UTC wall clock made from them, not `AT TIME ZONE 'UTC'`,
    // which asks ICU's calendar for each value: the same text at a third less of the packing's cost.
    if (type === TIMESTAMPTZ) fields.push(`${literal(name)}: strftime(make_timestamp(epoch_us(${column}) - epoch_us(${column}) % 1000), '%Y-%m-%dT%H:%M:%S.%gZ')`);
    else if (AS_JSON.has(type)) fields.push(`${literal(name)}: ${column}`);
    else return undefined;
  }
  return `SELECT count(*)::INTEGER AS n, string_agg(j, chr(30)) AS packed
  FROM (SELECT org, (row_number() OVER () - 1) // ${CHUNK_ROWS} AS chunk,
               '[' || to_json({${fields.join(', ')}})::VARCHAR || ',' || coalesce(custom_fields::VARCHAR, '{}') || ',' || to_json(org)::VARCHAR || ']' AS j
          FROM ${source})
 GROUP BY chunk`;
}

/** The profiles of the packed chunks, or undefined when one of them is not exactly what the row path gives. */
export function parseProfiles(chunks: readonly ProfileChunk[]): StoredProfile[] | undefined {
  const profiles: StoredProfile[] = [];
  for (const { n, packed } of chunks) {
    const rows = packed === null ? [] : packed.split(SEPARATOR);
    if (rows.length !== n) return undefined;
    for (const row of rows) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(row);
      } catch {
        return undefined;
      }
      const [fields, custom, org] = parsed as [Record<string, unknown>, unknown, string];
      if (typeof custom !== 'object' || custom === null || Array.isArray(custom)) return undefined;
      const customFields = Object.keys(custom);
      // Spread, not Object.assign onto the parsed object: that one, given more keys, went to dictionary mode.
      profiles.push({ org, profile: Object.freeze({ ...custom, ...fields }), customFields });
    }
  }
  return profiles;
}

/** A row of profiles_for read as values → the profile the index keeps (BIGINT → number, TIMESTAMPTZ → ISO string). */
export function profileOfRow(row: Row): StoredProfile {
  const { org, custom_fields: custom, ...fields } = row;
  const customFields = typeof custom === 'string' ? (JSON.parse(custom) as Record<string, unknown>) : {};
  const profile: Record<string, unknown> = { ...customFields };
  for (const [key, value] of Object.entries(fields)) {
    profile[key] = typeof value === 'bigint' ? Number(value) : value instanceof Date ? value.toISOString() : value;
  }
  return { org: org as string, profile: Object.freeze(profile), customFields: Object.keys(customFields) };
}
