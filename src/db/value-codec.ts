/**
 * DuckDB values across the thread boundary. Structured clone keeps a DuckDB value object's fields but
 * not its class, so parameters and appended cells cross tagged and are rebuilt on the worker side.
 */
import { DuckDBListValue, DuckDBTimestampTZValue, listValue, timestampTZValue, type DuckDBValue } from '@duckdb/node-api';
import type { Params, RowAppender } from './sql.js';

export type WireValue = null | string | number | bigint | boolean | { tstz: bigint } | { list: WireValue[] };
export type WireParams = WireValue[] | Record<string, WireValue>;
/** One appended cell: string = VARCHAR, number = INTEGER, bigint = BIGINT, { tstz } = TIMESTAMPTZ. */
export type WireCell = null | string | number | boolean | bigint | { tstz: bigint };

function toWire(value: DuckDBValue): WireValue {
  if (value === null || typeof value !== 'object') return value as WireValue;
  if (value instanceof DuckDBTimestampTZValue) return { tstz: value.micros };
  if (value instanceof DuckDBListValue) return { list: value.items.map(toWire) };
  throw new Error(`a ${value.constructor.name} parameter cannot be sent to the storage worker`);
}

function fromWire(value: WireValue): DuckDBValue {
  if (value === null || typeof value !== 'object') return value;
  if ('tstz' in value) return timestampTZValue(value.tstz);
  return listValue(value.list.map(fromWire));
}

export function paramsToWire(params: Params): WireParams {
  if (Array.isArray(params)) return params.map(toWire);
  return Object.fromEntries(Object.entries(params).map(([name, value]) => [name, toWire(value)]));
}

export function paramsFromWire(params: WireParams): Params {
  if (Array.isArray(params)) return params.map(fromWire);
  return Object.fromEntries(Object.entries(params).map(([name, value]) => [name, fromWire(value)]));
}

/** Records what `write` appends, row by row, as cells to replay on the worker (replayCells). */
export function recordRows<T>(rows: readonly T[], write: (appender: RowAppender, row: T) => void): WireCell[][] {
  let cells: WireCell[] = [];
  const recorder: RowAppender = {
    appendVarchar: (value) => cells.push(value),
    appendInteger: (value) => cells.push(value),
    appendBoolean: (value) => cells.push(value),
    appendBigInt: (value) => cells.push(value),
    appendTimestampTZ: (value) => cells.push({ tstz: value.micros }),
    appendNull: () => cells.push(null),
  };
  return rows.map((row) => {
    cells = [];
    write(recorder, row);
    return cells;
  });
}

export function replayCells(appender: RowAppender, cells: WireCell[]): void {
  for (const cell of cells) {
    if (cell === null) appender.appendNull();
    else if (typeof cell === 'string') appender.appendVarchar(cell);
    else if (typeof cell === 'number') appender.appendInteger(cell);
    else if (typeof cell === 'boolean') appender.appendBoolean(cell);
    else if (typeof cell === 'bigint') appender.appendBigInt(cell);
    else appender.appendTimestampTZ(timestampTZValue(cell.tstz));
  }
}
