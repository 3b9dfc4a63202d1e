/**
 * The storage worker thread: owns the orgs' DuckDB databases (org-databases.ts) and, when this process
 * compacts, the compactor.
 * Why a thread: compaction (planning, appenders, commits) and profile queries cost more main-thread
 * time per event than answering the collect request itself; here they use the second core instead of
 * delaying HTTP answers. The main thread reaches DuckDB through storage-client.ts with the same
 * Database interface, so stores and routes do not know which thread holds the file.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Compactor, type CompactorMetrics } from '../compaction/compactor.js';
import { createContext } from '../context.js';
import { EmbeddedTail } from '../log/embedded-tail.js';
import { JetStreamLog } from '../log/jetstream-log.js';
import type { LogBackend } from '../log/types.js';
import type { Sql } from '../db/sql.js';
import { LogCheckpoint } from './checkpoint.js';
import { OrgDatabases } from './org-databases.js';
import { LocalOrgStorage } from './org-storage.js';
import type { Call, FromWorker, StorageWorkerData, ToWorker } from './storage-protocol.js';
import { paramsFromWire, replayCells } from '../db/value-codec.js';

type CompactorLog = Pick<LogBackend, 'openReader' | 'headSeq'> & { close(): Promise<void> };

const port = parentPort!;
const data = workerData as StorageWorkerData;
const post = (message: FromWorker): void => port.postMessage(message);

const pool = new OrgDatabases(data.orgsDir, data.limits);
const orgs = new LocalOrgStorage(pool);
/** Connections lent to the main thread, by session id, until it releases (or abandons) them. */
const sessions = new Map<number, { sql: Sql; release: () => void; abandon?: () => void }>();
let nextSession = 1;
let compactor: Compactor | undefined;
let compactorLog: CompactorLog | undefined;
/** The embedded log's durable frames, followed from the start so no append reported before the
 *  compactor starts is missed. */
const tail = data.log?.kind === 'embedded' ? new EmbeddedTail(data.log.layout) : undefined;

const metrics: CompactorMetrics = {
  compactionBatchSeconds: { observe: (seconds: number) => post({ type: 'metric', metric: 'compactionBatchSeconds', seconds }) },
  eventsQuarantined: { inc: (labels: { code: string }) => post({ type: 'metric', metric: 'eventsQuarantined', code: labels.code }) },
  duplicatesDropped: { inc: (count) => post({ type: 'metric', metric: 'duplicatesDropped', count }) },
  compactionLag: { set: (records: number) => post({ type: 'metric', metric: 'compactionLag', records }) },
  compactionLagSeconds: { set: (seconds: number) => post({ type: 'metric', metric: 'compactionLagSeconds', seconds }) },
};

function session(id: number): Sql {
  const held = sessions.get(id);
  if (!held) throw new Error(`no open storage session ${id}`);
  return held.sql;
}

async function openCompactorLog(): Promise<CompactorLog> {
  const log = data.log!;
  switch (log.kind) {
    case 'jetstream':
      return JetStreamLog.open({ servers: log.natsUrl, ...log.options });
    case 'embedded':
      return tail!;
  }
}

async function handle(call: Call): Promise<unknown> {
  switch (call.op) {
    case 'open': {
      const id = nextSession++;
      const lease = await pool.lease(call.db);
      if (call.untrusted) {
        const handle = await lease.db.acquireUntrusted().catch((error: unknown) => {
          lease.release();
          throw error;
        });
        sessions.set(id, {
          sql: handle.sql,
          release: () => (handle.release(), lease.release()),
          abandon: () => (handle.abandon(), lease.release()),
        });
        return id;
      }
      // Resolves once this session holds the connection; the exclusive section lasts until 'release'.
      return new Promise<number>((opened) => {
        void lease.db
          .exclusive(
            (sql) =>
              new Promise<void>((release) => {
                sessions.set(id, { sql, release });
                opened(id);
              }),
          )
          .finally(() => lease.release());
      });
    }
    case 'release':
      sessions.get(call.session)?.release();
      sessions.delete(call.session);
      return undefined;
    case 'abandon':
      sessions.get(call.session)?.abandon?.();
      sessions.delete(call.session);
      return undefined;
    case 'read':
      return session(call.session).read(call.sql, paramsFromWire(call.params), call.maxRows);
    case 'all':
    case 'run': {
      const sql = 'session' in call ? session(call.session) : orgs.org(call.db);
      const params = paramsFromWire(call.params);
      return call.op === 'all' ? sql.all(call.sql, params) : sql.run(call.sql, params);
    }
    case 'append':
      return session(call.session).append(call.target, call.rows, replayCells);
    case 'columns':
      return session(call.session).columnNames(call.sql);
    case 'slugs':
      return pool.slugs();
    case 'drop':
      return pool.drop(call.slug);
    case 'pool':
      return { open: pool.openCount, highWater: pool.highWater };
    case 'compactor.start': {
      if (!data.log) throw new Error('this process does not compact');
      compactorLog = await openCompactorLog();
      compactor = new Compactor({
        orgs,
        checkpoint: new LogCheckpoint(data.checkpointFile),
        log: compactorLog,
        shard: data.shard,
        ctx: createContext(),
        metrics,
        logger: { error: (details, message) => post({ type: 'log', level: 'error', details: plain(details), message }) },
        afterCommit: async (report) => post({ type: 'compacted', report }),
        onProgress: (seq) => post({ type: 'progress', seq }),
      });
      await compactor.start();
      return compactor.compactedSeq;
    }
    case 'compactor.stop':
      await compactor?.stop();
      await compactorLog?.close();
      compactor = undefined;
      return undefined;
    case 'ping':
      return undefined;
    case 'close':
      await compactor?.stop();
      await compactorLog?.close();
      await pool.close();
      return undefined; // the main thread terminates this thread once it has the reply
  }
}

/** Errors do not survive structured clone with their class; logs get name, message and stack. */
function plain(details: object): object {
  return Object.fromEntries(
    Object.entries(details).map(([key, value]) => [key, value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value]),
  );
}

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'call':
      handle(message.call).then(
        (value) => post({ type: 'reply', id: message.id, ok: true, value }),
        (error: Error) => post({ type: 'reply', id: message.id, ok: false, error: { name: error.name, message: error.message } }),
      );
      return;
    case 'interrupt':
      sessions.get(message.session)?.sql.interrupt();
      return;
    case 'log-changed':
      tail?.changed(message.change);
      return;
  }
});
post({ type: 'ready' });
