/**
 * Flow definitions and their state (draft → live ⇄ paused), in DuckDB and mirrored in memory for the
 * runner's schedule: the one owner of the flows table, the runner's cursor and run status included.
 * Going live sets the cursor to the newest visible_at at that moment, so a flow
 * never messages for events that became visible before it (SPEC 8). Pausing keeps the cursor: a
 * resumed flow catches up on the events that arrived while it was paused.
 */
import type { Context } from '../../../core/context.js';
import { microsParam, tsParam } from '../../../db/database.js';
import type { Sql } from '../../../db/sql.js';
import type { OrgStorage } from '../../../db/org-storage.js';
import { microsToIso, NEWEST_VISIBLE_AT, newestVisibleAt } from '../../../events/compaction/visible-at.js';
import { AppError } from '../../../core/errors.js';
import type { Flow, FlowDefinition } from '../../../generated/flow.js';

export type FlowStatus = Flow['status'];

/** What a flow definition can name that has a lifecycle of its own. */
export interface Named {
  kind: 'topic' | 'trigger' | 'segment';
  name: string;
}
/** Where a definition names each (schemas/flow.schema.json). */
const NAMED_AT: Record<Named['kind'], string[]> = {
  topic: ['$.topic'],
  trigger: ['$.trigger'],
  segment: ['$.segmentFilter.segment', '$.audience.segment'],
};

export interface FlowRecord {
  org: string;
  definition: FlowDefinition;
  status: FlowStatus;
  createdAt: number;
  updatedAt: number;
  liveSince: number | null;
  /** visible_at (epoch µs) of the end of the last window run. */
  cursor: bigint | null;
  lastRunAt: number | null;
  lastError: string | null;
}

interface FlowRow {
  org: string;
  definition: string;
  status: FlowStatus;
  created_at: Date;
  updated_at: Date;
  live_since: Date | null;
  cursor_us: bigint | null;
  last_run_at: Date | null;
  last_error: string | null;
}

const SELECT_FLOWS = 'SELECT *, epoch_us(cursor_at) AS cursor_us FROM flows';
/** An empty run writes last_run_at at most this often (ranEmpty). */
const EMPTY_RUN_WRITE_MS = 60_000;

export class FlowStore {
  private readonly flows = new Map<string, FlowRecord>();
  /** When an empty run last wrote last_run_at, per flow (ranEmpty). */
  private readonly emptyRunWrittenAt = new Map<string, number>();
  private readonly archivedListeners: Array<(org: string, id: string) => void> = [];
  private guard: <T>(org: string, work: () => Promise<T>) => Promise<T> = (_org, work) => work();

  constructor(
    private readonly orgs: OrgStorage,
    private readonly ctx: Context,
  ) {}

  /** An org's flows, from its database. */
  async load(org: string): Promise<void> {
    for (const row of await this.orgs.org(org).all<FlowRow>(SELECT_FLOWS)) this.remember(fromRow(row));
  }

  /** The org was deleted: its flows are no longer run. */
  forget(org: string): void {
    for (const flow of this.list(org)) for (const map of [this.flows, this.emptyRunWrittenAt]) map.delete(key(org, flow.definition.id));
  }

  list(org: string): FlowRecord[] {
    return [...this.flows.values()].filter((f) => f.org === org).sort((a, b) => a.createdAt - b.createdAt);
  }

  live(): FlowRecord[] {
    return [...this.flows.values()].filter((f) => f.status === 'live');
  }

  /**
   * Ids of the org's flows not archived whose definition names the topic, trigger or segment, from its
   * database: the truth across processes. What such a flow names cannot be deleted.
   */
  async naming(org: string, named: Named): Promise<string[]> {
    const paths = NAMED_AT[named.kind].map((path) => `json_extract_string(definition, '${path}') = $2`).join(' OR ');
    const rows = await this.orgs.org(org).all<{ id: string }>(`SELECT id FROM flows WHERE org = $1 AND status <> 'archived' AND (${paths}) ORDER BY id`, [org, named.name]);
    return rows.map((r) => r.id);
  }

  /** The flow, or undefined when the org has none of that id. */
  find(org: string, id: string): FlowRecord | undefined {
    return this.flows.get(key(org, id));
  }

  get(org: string, id: string): FlowRecord {
    const flow = this.find(org, id);
    if (!flow) throw new AppError('flow_not_found', `no flow "${id}" in org "${org}"`);
    return flow;
  }

  async create(org: string, definition: FlowDefinition): Promise<FlowRecord> {
    const existing = this.flows.get(key(org, definition.id));
    if (existing?.status === 'archived') {
      throw new AppError('flow_exists', `flow "${definition.id}" was archived; its id stays with its history (sends, decisions, reentry): give the new flow another id`);
    }
    if (existing) throw new AppError('flow_exists', `flow "${definition.id}" already exists`);
    const now = tsParam(this.ctx.clock.now());
    await this.orgs.org(org).run("INSERT INTO flows VALUES ($1, $2, $3, 'draft', $4, $4, NULL, NULL, NULL, NULL)", [
      org,
      definition.id,
      JSON.stringify(definition),
      now,
    ]);
    return this.reload(org, definition.id);
  }

  /** The flow, which must not be archived (an archived flow is history: it cannot change, start or run). */
  changeable(org: string, id: string): FlowRecord {
    const flow = this.get(org, id);
    if (flow.status === 'archived') throw new AppError('flow_archived', `flow "${id}" was archived; it cannot change, start or run again (create a flow with another id)`);
    return flow;
  }

  /** Replaces the definition; a live flow uses it from its next run, its cursor unchanged. */
  async replace(org: string, definition: FlowDefinition): Promise<FlowRecord> {
    this.changeable(org, definition.id);
    await this.orgs.org(org).run('UPDATE flows SET definition = $3, updated_at = $4 WHERE org = $1 AND id = $2', [
      org,
      definition.id,
      JSON.stringify(definition),
      tsParam(this.ctx.clock.now()),
    ]);
    return this.reload(org, definition.id);
  }

  async start(org: string, id: string): Promise<FlowRecord> {
    const flow = this.changeable(org, id);
    if (flow.status === 'live') return flow;
    const now = tsParam(this.ctx.clock.now());
    await this.orgs.org(org).transaction(async (c) => {
      if (flow.status === 'draft') {
        // The go-live position: everything visible now is before the flow and never triggers it.
        const cursor = await newestVisibleAt(c);
        await c.run("UPDATE flows SET status = 'live', live_since = $3, cursor_at = $4, updated_at = $3 WHERE org = $1 AND id = $2", [
          org,
          id,
          now,
          microsParam(cursor),
        ]);
      } else {
        await c.run("UPDATE flows SET status = 'live', updated_at = $3 WHERE org = $1 AND id = $2", [org, id, now]);
      }
    });
    return this.reload(org, id);
  }

  async pause(org: string, id: string): Promise<FlowRecord> {
    const flow = this.changeable(org, id);
    if (flow.status !== 'live') return flow;
    await this.orgs.org(org).run("UPDATE flows SET status = 'paused', updated_at = $3 WHERE org = $1 AND id = $2", [org, id, tsParam(this.ctx.clock.now())]);
    return this.reload(org, id);
  }

  /**
   * Archives the flow in one transaction with `work` (what goes with it: its entries in steps, its sends
   * not yet handed to a channel, its unfinished occurrence), in the org's turn (serializeArchivesWith):
   * it never runs again, and a run that took its window before writes nothing (`advance` finds it no
   * longer live). Its history stays, and so does its id. Answers what `work` answered, or undefined when
   * it was archived already.
   */
  async archive<T>(org: string, id: string, work: (c: Sql) => Promise<T>): Promise<{ flow: FlowRecord; removed: T | undefined }> {
    const flow = this.get(org, id);
    if (flow.status === 'archived') return { flow, removed: undefined };
    const removed = await this.guard(org, () =>
      this.orgs.org(org).transaction(async (c) => {
        await c.run("UPDATE flows SET status = 'archived', updated_at = $3 WHERE org = $1 AND id = $2", [org, id, tsParam(this.ctx.clock.now())]);
        return work(c);
      }),
    );
    const archived = await this.reload(org, id);
    for (const listener of this.archivedListeners) listener(org, id);
    return { flow: archived, removed };
  }

  /** The flows role: an archive waits for the org's run, step pass or occurrence chunk in progress, and they for it. */
  serializeArchivesWith(guard: <T>(org: string, work: () => Promise<T>) => Promise<T>): void {
    this.guard = guard;
  }

  /** `listener` hears of each flow archived in this process, after its transaction (the dispatcher drops its queued sends). */
  onArchived(listener: (org: string, id: string) => void): void {
    this.archivedListeners.push(listener);
  }

  /** The flow's next window (cursor, newest visible_at], read in one statement; undefined when it is no longer live. */
  async window(org: string, id: string): Promise<{ start: bigint; end: bigint } | undefined> {
    const [row] = await this.orgs
      .org(org)
      .all<{ status: string; cursor_us: bigint | null; newest: bigint | null }>(`SELECT status, epoch_us(cursor_at) AS cursor_us, ${NEWEST_VISIBLE_AT} AS newest FROM flows WHERE org = $1 AND id = $2`, [org, id]);
    return row?.status === 'live' ? { start: row.cursor_us ?? 0n, end: row.newest ?? 0n } : undefined;
  }

  /**
   * One transaction that runs `work` (the run's writes) and moves the cursor from `from` to `to`, or
   * writes nothing and answers false when the cursor is no longer at `from` (or the flow is no longer
   * live): another run, here or in another process, took that window.
   */
  async advance(org: string, id: string, cursor: { from: bigint; to: bigint }, at: number, work: (c: Sql) => Promise<void>): Promise<boolean> {
    const committed = await this.orgs.org(org).transaction(async (c) => {
      // The check and the move in one statement: nothing else is written unless it moved.
      const moved = await c.all(
        `UPDATE flows SET cursor_at = $3, last_run_at = $4, last_error = NULL
          WHERE org = $1 AND id = $2 AND status = 'live' AND coalesce(epoch_us(cursor_at), 0) = $5 RETURNING 1`,
        [org, id, microsParam(cursor.to), tsParam(at), cursor.from],
      );
      if (moved.length === 0) return false;
      await work(c);
      return true;
    });
    // What it wrote, in the record in memory: a re-read here held each run's sends back by a statement.
    const flow = this.flows.get(key(org, id));
    if (committed && flow) this.flows.set(key(org, id), { ...flow, cursor: cursor.to, lastRunAt: at, lastError: null });
    return committed;
  }

  /**
   * A run found nothing new to read: last_run_at moves, last_error clears — in the record in memory (what
   * the API shows) at once, in the database only when an error is cleared or EMPTY_RUN_WRITE_MS after the
   * last write. The write was most of an idle flow's cost: 60 one-second flows of an idle org took 0.69–0.79
   * of a core (process tree, 2 cores), 0.26–0.39 without it (bench/idle-flows.ts).
   */
  async ranEmpty(org: string, id: string, at: number): Promise<void> {
    const k = key(org, id);
    const flow = this.flows.get(k);
    if (flow) this.flows.set(k, { ...flow, lastRunAt: at, lastError: null });
    if (flow?.lastError === null && at - (this.emptyRunWrittenAt.get(k) ?? -Infinity) < EMPTY_RUN_WRITE_MS) return;
    this.emptyRunWrittenAt.set(k, at);
    await this.orgs.org(org).run('UPDATE flows SET last_run_at = $3, last_error = NULL WHERE org = $1 AND id = $2', [org, id, tsParam(at)]);
  }

  /** A run did not run its window, for `reason`: the cursor stays, the next run tries again. */
  async runFailed(org: string, id: string, at: number, reason: string): Promise<FlowRecord> {
    await this.orgs.org(org).run('UPDATE flows SET last_run_at = $3, last_error = $4 WHERE org = $1 AND id = $2', [org, id, tsParam(at), reason]);
    return this.reload(org, id);
  }

  /** Re-reads one flow after a write. */
  async reload(org: string, id: string): Promise<FlowRecord> {
    const [row] = await this.orgs.org(org).all<FlowRow>(`${SELECT_FLOWS} WHERE org = $1 AND id = $2`, [org, id]);
    if (!row) throw new AppError('flow_not_found', `no flow "${id}" in org "${org}"`);
    return this.remember(fromRow(row));
  }

  private remember(flow: FlowRecord): FlowRecord {
    this.flows.set(key(flow.org, flow.definition.id), flow);
    return flow;
  }
}

export function toApiFlow(flow: FlowRecord): Flow {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    definition: flow.definition,
    status: flow.status,
    createdAt: new Date(flow.createdAt).toISOString(),
    updatedAt: new Date(flow.updatedAt).toISOString(),
    liveSince: iso(flow.liveSince),
    cursorAt: flow.cursor === null ? null : microsToIso(flow.cursor),
    lastRunAt: iso(flow.lastRunAt),
    lastError: flow.lastError,
  };
}

function key(org: string, id: string): string {
  return `${org}/${id}`;
}

function fromRow(row: FlowRow): FlowRecord {
  return {
    org: row.org,
    definition: JSON.parse(row.definition) as FlowDefinition,
    status: row.status,
    createdAt: row.created_at.getTime(),
    updatedAt: row.updated_at.getTime(),
    liveSince: row.live_since?.getTime() ?? null,
    cursor: row.cursor_us,
    lastRunAt: row.last_run_at?.getTime() ?? null,
    lastError: row.last_error,
  };
}
