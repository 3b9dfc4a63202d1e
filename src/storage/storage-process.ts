/**
 * The storage process: owns the orgs' DuckDB databases (org-databases.ts) and, when this service
 * compacts, the compactor. Started and supervised by storage-client.ts.
 * Why a process of its own: compaction (planning, appenders, commits) and profile queries cost more CPU
 * per event than answering the collect request, and org SQL is untrusted: a query that DuckDB cannot
 * interrupt (one long native function call) can only be stopped by killing what runs it. Killed or
 * crashed, this process takes none of collect, lookups or the event log with it; the supervisor starts a
 * new one, which replays from the log what was in flight. The service reaches DuckDB through
 * storage-client.ts with the same Database interface, so stores and routes do not know where the file is held.
 */
import { Compactor } from '../events/compaction/compactor.js';
import type { CompactorMetrics } from '../events/compaction/compaction.js';
import { createContext } from '../core/context.js';
import { EmbeddedTail } from '../events/log/embedded-tail.js';
import { JetStreamLog } from '../events/log/jetstream-log.js';
import type { LogBackend } from '../events/log/types.js';
import type { ColumnPage, Sql } from '../db/sql.js';
import { threadPoolHasAtLeast } from '../core/threadpool.js';
import { LogCheckpoint } from './checkpoint.js';
import { OrgDatabases } from './org-databases.js';
import { LocalOrgStorage } from './org-storage.js';
import { type Call, type FromStorage, READ_PAGE_ROWS, type ReadPage, type StorageProcessData, type ToStorage, type WireError } from './storage-protocol.js';
import { paramsFromWire, replayCells } from '../db/value-codec.js';
import { liveWithParent } from '../core/spawn-process.js';

type CompactorLog = Pick<LogBackend, 'openReader' | 'headSeq'> & { close(): Promise<void> };

interface Open {
  data: StorageProcessData;
  pool: OrgDatabases;
  orgs: LocalOrgStorage;
  /** The embedded log's durable frames, followed from the start so no append reported before the
   *  compactor starts is missed. */
  tail: EmbeddedTail | undefined;
}

// Once the service is gone (killed -9) nothing is sent: this process exits on the disconnect (liveWithParent).
const post = (message: FromStorage, sent?: () => void): void => {
  if (process.connected) void (sent ? process.send!(message, () => sent()) : process.send!(message));
};

/** Connections lent to the service, by session id, until it releases them; `rest`: rows of a read not sent yet. */
const sessions = new Map<number, { org: string; sql: Sql; release: () => void; abandon?: () => void; rest?: { page: ColumnPage; from: number } }>();
let nextSession = 1;
let compactor: Compactor | undefined;
let compactorLog: CompactorLog | undefined;
let open: Open | undefined;

const metrics: CompactorMetrics = {
  compactionBatchSeconds: { observe: (seconds: number) => post({ type: 'metric', metric: 'compactionBatchSeconds', seconds }) },
  eventsQuarantined: { inc: (labels: { code: string }) => post({ type: 'metric', metric: 'eventsQuarantined', code: labels.code }) },
  duplicatesDropped: { inc: (count) => post({ type: 'metric', metric: 'duplicatesDropped', count }) },
  eventsKeptOut: { inc: ({ reason }, count) => post({ type: 'metric', metric: 'eventsKeptOut', reason, count }) },
  logRecordsLost: { inc: (count: number) => post({ type: 'metric', metric: 'logRecordsLost', count }) },
};

/** The next READ_PAGE_ROWS rows of the session's last read. */
function nextPage(id: number): ReadPage {
  const held = sessions.get(id);
  const rest = held?.rest;
  if (!held || !rest) throw new Error(`no read in progress on storage session ${id}`);
  const { page, from } = rest;
  const to = from + READ_PAGE_ROWS;
  const more = (page.columns[0]?.length ?? 0) > to;
  if (more) rest.from = to;
  else held.rest = undefined;
  return { names: page.names, columns: page.columns.map((column) => column.slice(from, to)), truncated: page.truncated, more };
}

function session(id: number): Sql {
  const held = sessions.get(id);
  if (!held) throw new Error(`no open storage session ${id}`);
  return held.sql;
}

async function openCompactorLog({ data, tail }: Open): Promise<CompactorLog> {
  const log = data.log!;
  switch (log.kind) {
    case 'jetstream':
      return JetStreamLog.open({ servers: log.natsUrl, ...log.options });
    case 'embedded':
      return tail!;
  }
}

async function handle(call: Call, { data, pool, orgs, tail }: Open): Promise<unknown> {
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
          org: call.db,
          sql: handle.sql,
          release: () => (handle.release(), lease.release()),
          abandon: () => (handle.abandon(), lease.release()),
        });
        return id;
      }
      // Resolves once this session holds the connection (in a transaction when asked); the exclusive
      // section lasts until 'release'.
      return new Promise<number>((opened, failed) => {
        lease.db
          .exclusive(
            (sql) =>
              new Promise<void>((release) => {
                (call.begin ? sql.run('BEGIN TRANSACTION') : Promise.resolve()).then(
                  () => (sessions.set(id, { org: call.db, sql, release }), opened(id)),
                  (error: unknown) => (release(), failed(error)),
                );
              }),
          )
          .catch(failed)
          .finally(() => lease.release());
      });
    }
    case 'release': {
      const held = sessions.get(call.session);
      sessions.delete(call.session);
      if (!held) {
        if (call.end === 'commit') throw new Error(`no open storage session ${call.session} to commit`);
        return undefined;
      }
      try {
        if (call.end === 'commit') await held.sql.run('COMMIT');
        else if (call.end === 'rollback') await held.sql.run('ROLLBACK').catch(() => undefined);
      } catch (error) {
        await held.sql.run('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        held.release();
      }
      return undefined;
    }
    case 'abandon':
      sessions.get(call.session)?.abandon?.();
      sessions.delete(call.session);
      return undefined;
    case 'read': {
      const page = await session(call.session).read(call.sql, paramsFromWire(call.params), call.maxRows);
      sessions.get(call.session)!.rest = { page, from: 0 };
      return nextPage(call.session);
    }
    case 'read-more':
      return nextPage(call.session);
    case 'all':
    case 'run': {
      const sql = 'session' in call ? session(call.session) : orgs.org(call.db);
      const params = paramsFromWire(call.params);
      return call.op === 'all' ? sql.all(call.sql, params) : sql.run(call.sql, params);
    }
    case 'append-rows':
      return session(call.session).appendRows(call.target, call.rows, replayCells);
    case 'columns':
      return session(call.session).columnNames(call.sql);
    case 'slugs':
      return pool.slugs();
    case 'drop':
      return pool.drop(call.slug);
    case 'pool':
      return { open: pool.openCount, highWater: pool.highWater };
    case 'unavailable':
      return pool.unavailable();
    case 'compactor.start': {
      if (!data.log) throw new Error('this process does not compact');
      compactorLog = await openCompactorLog({ data, pool, orgs, tail });
      compactor = new Compactor({
        orgs,
        checkpoint: new LogCheckpoint(data.checkpointFile),
        log: compactorLog,
        shard: data.shard,
        ctx: createContext(),
        metrics,
        logger: { error: (details, message) => post({ type: 'log', level: 'error', details: plain(details), message }) },
        afterCommit: async (report) => post({ type: 'compacted', report }),
        onProgress: (seq, retainFromSeq) => post({ type: 'progress', seq, retainFromSeq }),
      });
      await compactor.start({ reportedSince: call.reportedSince });
      return { seq: compactor.compactedSeq, retainFromSeq: compactor.retainFromSeq };
    }
    case 'compactor.holds':
      return compactor?.holds(call.org, call.messageId) ?? false;
    case 'compactor.reload':
      return compactor?.reload(call.org);
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
      return undefined; // the service ends this process once it has the reply
  }
}

function toWire(error: Error): WireError {
  const { slug, reason } = error as { slug?: unknown; reason?: unknown };
  return { name: error.name, message: error.message, ...(typeof slug === 'string' ? { slug } : {}), ...(typeof reason === 'string' ? { reason } : {}) };
}

/** Errors do not survive structured clone with their class; logs get name, message and stack. */
function plain(details: object): object {
  return Object.fromEntries(
    Object.entries(details).map(([key, value]) => [key, value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value]),
  );
}

function openStorage(data: StorageProcessData): Open {
  const pool = new OrgDatabases(data.orgsDir, data.limits);
  // Made at once: log changes the service reports from now on must reach it.
  const tail = data.log?.kind === 'embedded' ? new EmbeddedTail(data.log.layout) : undefined;
  return { data, pool, orgs: new LocalOrgStorage(pool), tail };
}

async function checkThreadPool(data: StorageProcessData): Promise<void> {
  if (!(await threadPoolHasAtLeast(data.threadPoolSize))) {
    throw new Error(`libuv's thread pool has fewer than ${data.threadPoolSize} threads: UV_THREADPOOL_SIZE was not in force when this process started`);
  }
}

// An exit without DuckDB's close is safe: its WAL is replayed at the next open.
liveWithParent();

process.on('message', (message: ToStorage) => {
  switch (message.type) {
    case 'init':
      open = openStorage(message.data);
      checkThreadPool(message.data).then(
        () => post({ type: 'ready' }),
        (error: Error) => {
          post({ type: 'log', level: 'error', details: plain({ err: error }), message: 'storage process could not start' }, () => process.exit(1));
        },
      );
      return;
    case 'call': {
      if (!open) {
        post({ type: 'reply', id: message.id, ok: false, error: { name: 'Error', message: 'the storage process is not started' } });
        return;
      }
      const { call } = message;
      const org = 'db' in call ? call.db : 'session' in call ? sessions.get(call.session)?.org : undefined;
      handle(call, open).then(
        (value) => post({ type: 'reply', id: message.id, ok: true, value }),
        // A statement that finds the org's file damaged makes that org unavailable (org-databases.ts).
        (error: Error) => post({ type: 'reply', id: message.id, ok: false, error: toWire((org ? open!.pool.damage(org, error) : error) as Error) }),
      );
      return;
    }
    case 'interrupt':
      sessions.get(message.session)?.sql.interrupt();
      return;
    case 'log-changed':
      open?.tail?.changed(message.change);
      return;
  }
});
