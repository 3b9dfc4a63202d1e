/** Bulk writes through a DuckDB Appender (~600k rows/s against ~3k/s for single INSERTs), inside the caller's transaction. */
import type { DuckDBAppender, DuckDBConnection } from '@duckdb/node-api';
import { YIELD_EVERY, yieldNow } from './yield-now.js';

export async function appendRows<T>(
  c: DuckDBConnection,
  table: string,
  rows: readonly T[],
  write: (appender: DuckDBAppender, row: T) => void,
): Promise<void> {
  const appender = await c.createAppender(table);
  try {
    let appended = 0;
    for (const row of rows) {
      write(appender, row);
      appender.endRow();
      if (++appended % YIELD_EVERY === 0) await yieldNow();
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
}
