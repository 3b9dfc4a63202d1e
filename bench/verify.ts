/**
 * After the service has stopped: what its embedded log and its DuckDB file hold, counted directly
 * (the log through the service's own reader and record codec, DuckDB opened read-only).
 */
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { EmbeddedLog } from '../src/events/log/embedded-log.js';
import { decodeRecord } from '../src/events/log/record-codec.js';

export interface LogCounts {
  records: number;
  events: number;
  rejected: number;
  /** Events per record (group-commit size), mean. */
  eventsPerRecord: number;
}

export async function countLog(dataDir: string): Promise<LogCounts> {
  const log = await EmbeddedLog.open(join(dataDir, 'log'));
  try {
    const head = await log.headSeq();
    const reader = await log.openReader(0);
    let events = 0;
    let rejected = 0;
    let seen = 0;
    while (seen < head) {
      const records = await reader.read(2000, 0);
      if (records.length === 0) break;
      for (const record of records) {
        for (const entry of decodeRecord(record.payload)) {
          if (entry.kind === 'event') events++;
          else rejected++;
        }
      }
      seen += records.length;
    }
    await reader.close();
    return { records: head, events, rejected, eventsPerRecord: head ? Math.round((events / head) * 10) / 10 : 0 };
  } finally {
    await log.close();
  }
}

export interface DbCounts {
  events: number;
  distinctMessageIds: number;
  quarantine: number;
  pending: number;
  cursor: number;
}

export async function countDuckDb(dataDir: string, org: string): Promise<DbCounts> {
  const instance = await DuckDBInstance.create(join(dataDir, 'orgs', `${org}.duckdb`), { access_mode: 'READ_ONLY' });
  const connection = await instance.connect();
  try {
    const one = async (sql: string, params: string[] = []) => {
      const rows = (await connection.runAndReadAll(sql, params)).getRows();
      return Number(rows[0]?.[0] ?? 0);
    };
    return {
      events: await one('SELECT count(*) FROM events WHERE org = $1', [org]),
      distinctMessageIds: await one('SELECT count(DISTINCT message_id) FROM events WHERE org = $1', [org]),
      quarantine: await one('SELECT count(*) FROM quarantine WHERE org = $1', [org]),
      pending: await one('SELECT count(*) FROM pending_identity WHERE org = $1', [org]),
      cursor: await one("SELECT coalesce(max(seq), 0) FROM log_cursor WHERE name = 'compactor'"),
    };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
