/**
 * The drain phase's bare equivalent (issue 39): DuckDB's own `read_json` of the same events into a table
 * of a database file, in this process, timed from the statement to its commit. The events are the drain
 * backlog's (BodyTemplate's members: the same members, lengths and identities), one JSON object per line.
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import { DuckDBInstance } from '@duckdb/node-api';
import { BodyTemplate } from './bodies.js';

export interface ReadJsonOutcome {
  events: number;
  ms: number;
  eventsPerSec: number;
}

export async function duckdbReadJson(workDir: string, events: number, tag: string): Promise<ReadJsonOutcome> {
  const file = join(workDir, 'drain-bare.ndjson');
  const template = BodyTemplate.single({ partnerId: 'p', partnerSecret: 's' }, tag);
  const out = createWriteStream(file);
  for (let i = 0; i < events; i++) {
    if (!out.write(template.next())) await once(out, 'drain');
    out.write('\n');
  }
  out.end();
  await once(out, 'finish');
  const dbFile = join(workDir, 'drain-bare.duckdb');
  const instance = await DuckDBInstance.create(dbFile);
  const connection = await instance.connect();
  try {
    const started = performance.now();
    await connection.run(`CREATE TABLE events AS SELECT * FROM read_json('${file}', format = 'newline_delimited')`);
    const ms = performance.now() - started;
    const counted = await connection.runAndReadAll('SELECT count(*)::INTEGER AS n FROM events');
    const rows = counted.getRowObjects()[0]!.n as number;
    if (rows !== events) throw new Error(`read_json stored ${rows} of ${events} events`);
    return { events, ms: Math.round(ms), eventsPerSec: Math.round(events / (ms / 1000)) };
  } finally {
    connection.closeSync();
    instance.closeSync();
    await rm(file, { force: true });
    await rm(dbFile, { force: true });
    await rm(`${dbFile}.wal`, { force: true });
  }
}
