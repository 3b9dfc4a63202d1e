/**
 * A large result read as a few strings (issue 39, design 1). `@duckdb/node-api` converts each value with
 * a native call and a decode: 10,000 trigger rows of six columns took ~89 ms to read (slow 2-core
 * machine) and `count(*)` of the same query ~2 ms. Here DuckDB packs each column of up to PACK_ROWS rows
 * into one string (`string_agg` in the query's own row order) and JS splits it: ~46 ms for the same rows,
 * the first rows read before packing included (LocalSql.read).
 *
 * Only columns whose JS value is rebuilt exactly from text are packed (PACKABLE); a query with any other
 * column is read as before. Each value is written as MARK + its text (NULL as the empty string) and the
 * values are joined by SEPARATOR: a value holding SEPARATOR itself shows as one piece too many, and the
 * whole read is then done as before (`undefined` from `unpack`), so no value is ever cut or merged.
 */
import { DuckDBTypeId, type DuckDBType } from '@duckdb/node-api';

/** Rows per packed string: a column's string stays far below V8's largest (~512 M characters) even for 32 KB values. */
export const PACK_ROWS = 2048;
const SEPARATOR = '\u001e';
const MARK = '\u001f';

let packedReads = 0;

/** Reads answered packed since the process started (the tests check that large reads are). */
export function packedReadCount(): number {
  return packedReads;
}

type Kind = 'text' | 'bigint' | 'integer' | 'boolean' | 'timestamp';

/** DuckDB's type → how its packed text turns back into the value `getColumnsJS` would give. */
const PACKABLE: Partial<Record<DuckDBTypeId, Kind>> = {
  [DuckDBTypeId.VARCHAR]: 'text', // JSON too (an alias of VARCHAR)
  [DuckDBTypeId.BIGINT]: 'bigint',
  [DuckDBTypeId.INTEGER]: 'integer',
  [DuckDBTypeId.BOOLEAN]: 'boolean',
  [DuckDBTypeId.TIMESTAMP]: 'timestamp',
  [DuckDBTypeId.TIMESTAMP_TZ]: 'timestamp',
};

/** The kinds of a result's columns, or undefined when one of them cannot be packed. */
export function packableKinds(types: readonly DuckDBType[]): Kind[] | undefined {
  const kinds = types.map((type) => PACKABLE[type.typeId]);
  return kinds.every((kind) => kind !== undefined) ? (kinds as Kind[]) : undefined;
}

/**
 * Text of a value in SQL: timestamps as epoch microseconds (`epoch_us` of ±infinity is NULL: those are
 * written `inf`, which no Date holds), the rest as DuckDB casts them.
 */
function valueText(column: string, kind: Kind): string {
  return kind === 'timestamp' ? `CASE WHEN isfinite(${column}) THEN epoch_us(${column})::VARCHAR WHEN ${column} IS NOT NULL THEN 'inf' END` : `${column}::VARCHAR`;
}

/**
 * `sql` (a query of `kinds.length` columns) wrapped so that its first `limit` rows come back as one row
 * per PACK_ROWS of them: `n`, then one string per column, in the query's row order.
 */
export function packedSql(sql: string, kinds: readonly Kind[], limit: number): string {
  const names = kinds.map((_, i) => `__c${i}`);
  const packed = kinds.map((kind, i) => `string_agg(coalesce(chr(31) || ${valueText(names[i]!, kind)}, ''), chr(30) ORDER BY __rn) AS __p${i}`);
  return `SELECT count(*) AS __n, ${packed.join(', ')}
    FROM (SELECT *, row_number() OVER () - 1 AS __rn FROM (SELECT * FROM (${sql}) LIMIT ${limit}) AS __q(${names.join(', ')}))
    GROUP BY __rn // ${PACK_ROWS} ORDER BY __rn // ${PACK_ROWS}`;
}

const MIN_DATE_MS = -8_640_000_000_000_000n;
const MAX_DATE_MS = 8_640_000_000_000_000n;

/** A timestamp's epoch microseconds → the Date `getColumnsJS` gives (micros / 1000 truncated), or undefined out of a Date's range. */
function dateOf(text: string): Date | undefined {
  if (text === 'inf') return undefined;
  const millis = BigInt(text) / 1000n;
  return millis < MIN_DATE_MS || millis > MAX_DATE_MS ? undefined : new Date(Number(millis));
}

function valueOf(text: string, kind: Kind): unknown {
  switch (kind) {
    case 'text':
      return text;
    case 'bigint':
      return BigInt(text);
    case 'integer':
      return Number(text);
    case 'boolean':
      return text === 'true';
    case 'timestamp':
      return dateOf(text);
  }
}

/**
 * The columns of the packed rows (`packedSql`'s answer, as columns), or undefined when a value held the
 * separator or a timestamp lies outside a JS Date's range: the caller reads the query as before then.
 */
export function unpack(packedColumns: readonly unknown[][], kinds: readonly Kind[]): unknown[][] | undefined {
  const columns: unknown[][] = kinds.map(() => []);
  const counts = packedColumns[0] ?? [];
  for (let group = 0; group < counts.length; group++) {
    const n = Number(counts[group]);
    for (let c = 0; c < kinds.length; c++) {
      const pieces = (packedColumns[c + 1]![group] as string).split(SEPARATOR);
      if (pieces.length !== n) return undefined;
      const column = columns[c]!;
      const kind = kinds[c]!;
      for (const piece of pieces) {
        if (piece === '') {
          column.push(null);
          continue;
        }
        const value = valueOf(piece.slice(MARK.length), kind);
        if (value === undefined) return undefined;
        column.push(value);
      }
    }
  }
  packedReads++;
  return columns;
}
