/**
 * Runs live flows on their schedule (SPEC 8). One run, in one DuckDB transaction:
 *   window (cursor, newest visible_at] → trigger rows → decisions → outbox rows + cursor advance.
 * Why this gives every visible event exactly one window: visible_at is assigned inside the (serialized)
 * compaction transaction and grows with each commit, and the window end is read in the run's own
 * snapshot, so every event with visible_at ≤ end is already visible to the run's query, and every later
 * one is > end and falls in a later window.
 * Why a send key is never sent twice: the keys already used are read in the same transaction that
 * writes the new ones, and DuckDB access is serialized, so runs (even two runners) never interleave.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Sql } from '../db/sql.js';
import { listValue } from '@duckdb/node-api';
import type { Context } from '../context.js';
import { type Database, microsParam, tsParam } from '../db/database.js';
import { normalizeEmail } from '../domain.js';
import type { Metrics } from '../ops/metrics.js';
import { PeriodicTask } from '../periodic-task.js';
import type { ContactKey } from '../profiles/profile-materializer.js';
import type { ProfileIndex } from '../profiles/profile-index.js';
import { QueryFailed, runSandboxed } from '../triggers/sandbox.js';
import type { LiveQuery, TriggerStore } from '../triggers/trigger-store.js';
import { type Decision, decide, resolveEmail, type RunState, sendKey } from './decide.js';
import { type FlowRecord, type FlowStore, newestVisibleAt } from './flow-store.js';
import type { PendingSend, SendDispatcher } from './send-dispatcher.js';
import { renderDecisions, type TemplateRenderer } from './template-renderer.js';

export interface RunSummary {
  /** Why nothing ran, when nothing did. */
  skipped?: string;
  rows: number;
  decisions: Decision[];
}

const TICK_MS = 100;

export class FlowRunner {
  private readonly nextRunAt = new Map<string, number>();
  private readonly ticker = new PeriodicTask(
    () => this.runDue(),
    (err) => this.deps.logger.error({ err }, 'running due flows failed'),
  );

  constructor(
    private readonly deps: {
      db: Database;
      ctx: Context;
      flows: FlowStore;
      triggers: TriggerStore;
      profiles: ProfileIndex;
      dispatcher: SendDispatcher;
      renderer: Pick<TemplateRenderer, 'render'>;
      metrics: Metrics;
      logger: FastifyBaseLogger;
      timeoutMs: number;
      refreshProfiles(keys: ContactKey[]): void;
    },
  ) {}

  start(): void {
    this.ticker.start(TICK_MS);
  }

  close(): Promise<void> {
    return this.ticker.stop();
  }

  /** Runs every live flow whose schedule is due (one at a time: they share the DuckDB connection). */
  async runDue(): Promise<void> {
    for (const flow of this.deps.flows.live()) {
      const key = `${flow.org}/${flow.definition.id}`;
      const now = Date.now();
      const interval = (flow.definition.scheduleSeconds ?? 60) * 1000;
      const due = this.nextRunAt.get(key);
      // A flow seen for the first time (just started, or at process start) runs one interval later.
      if (due === undefined) this.nextRunAt.set(key, now + interval);
      if (due === undefined || due > now) continue;
      this.nextRunAt.set(key, now + interval);
      await this.run(flow.org, flow.definition.id).catch((err: unknown) =>
        this.deps.logger.error({ err, org: flow.org, flow: flow.definition.id }, 'flow run failed'),
      );
    }
  }

  /** One run of one flow now, whatever its schedule. */
  async run(org: string, id: string): Promise<RunSummary> {
    const flow = this.deps.flows.get(org, id);
    if (flow.status !== 'live') return { skipped: `flow is ${flow.status}`, rows: 0, decisions: [] };
    const trigger = this.deps.triggers.live(org, 'trigger', flow.definition.trigger);
    if (!trigger) return this.fail(flow, `trigger ${flow.definition.trigger} has no valid version`);
    const segmentName = flow.definition.segmentFilter?.segment;
    const segment = segmentName === undefined ? undefined : this.deps.triggers.live(org, 'segment', segmentName);
    if (segmentName !== undefined && !segment) return this.fail(flow, `segment ${segmentName} has no valid version`);

    let summary: RunSummary;
    try {
      summary = await this.deps.db.transaction(async (c) => {
        // Timed once the connection is ours: waiting behind compaction is not the run's cost.
        const stopTimer = this.deps.metrics.triggerRunSeconds.startTimer();
        try {
          return await this.runInTransaction(c, flow, trigger, segment);
        } finally {
          stopTimer();
        }
      });
    } catch (error) {
      if (error instanceof QueryFailed) return this.fail(flow, error.reason);
      throw error;
    }
    await this.deps.flows.reload(org, id);
    this.afterCommit(org, id, summary.decisions);
    return summary;
  }

  private async runInTransaction(c: Sql, flow: FlowRecord, trigger: LiveQuery, segment: LiveQuery | undefined): Promise<RunSummary> {
    const { org } = flow;
    const id = flow.definition.id;
    const now = this.deps.ctx.clock.now();
    const [current] = await c.all<{ status: string; cursor_us: bigint | null }>(
      'SELECT status, epoch_us(cursor_at) AS cursor_us FROM flows WHERE org = $1 AND id = $2',
      [org, id],
    );
    if (current?.status !== 'live') return { skipped: 'flow is no longer live', rows: 0, decisions: [] };
    const start = current.cursor_us ?? 0n;
    const end = await newestVisibleAt(c);
    if (end <= start) {
      await c.run('UPDATE flows SET last_run_at = $3, last_error = NULL WHERE org = $1 AND id = $2', [org, id, tsParam(now)]);
      return { rows: 0, decisions: [] };
    }
    const window = { cursor_start_time: microsParam(start), cursor_end_time: microsParam(end) };
    const stopQueryTimer = this.deps.metrics.triggerQuerySeconds.startTimer();
    const rows = await runSandboxed(c, org, trigger.checked, window, this.deps.timeoutMs);
    stopQueryTimer();
    const segmentEmails = segment
      ? new Set((await runSandboxed(c, org, segment.checked, window, this.deps.timeoutMs)).map((r) => normalizeEmail(String(r.email ?? ''))))
      : undefined;

    const profile: RunState['profile'] = (type, value) => this.deps.profiles.find(org, type, value);
    const emails = [...new Set(rows.map((r) => resolveEmail(str(r.identity), str(r.identity_type), { profile })).filter((e): e is string => e !== null))];
    const eventIds = [...new Set(rows.map((r) => str(r.event_id)).filter((e): e is string => e !== null))];
    const state: RunState = {
      org,
      flow: flow.definition,
      now,
      ...(segmentEmails ? { segment: segmentEmails } : {}),
      keys: await this.usedKeys(c, org, id, eventIds),
      lastEntry: await this.lastEntries(c, org, id, emails),
      profile,
    };
    // Templates render on the renderer's thread, within its limits; a template over them fails its row.
    const decisions = await renderDecisions(this.deps.renderer, rows.map((row) => decide(row, state)));
    await this.record(c, org, id, trigger.hash, decisions, now);
    await c.run('UPDATE flows SET cursor_at = $3, last_run_at = $4, last_error = NULL WHERE org = $1 AND id = $2', [org, id, microsParam(end), tsParam(now)]);
    return { rows: rows.length, decisions };
  }

  private async usedKeys(c: Sql, org: string, flowId: string, eventIds: string[]): Promise<Set<string>> {
    if (eventIds.length === 0) return new Set();
    const used = await c.all<{ email: string; event_id: string }>(
      'SELECT email, event_id FROM flow_sends WHERE org = $1 AND flow_id = $2 AND event_id IN (SELECT unnest($3::VARCHAR[]))',
      [org, flowId, listValue(eventIds)],
    );
    return new Set(used.map((u) => sendKey(u.email, u.event_id)));
  }

  private async lastEntries(c: Sql, org: string, flowId: string, emails: string[]): Promise<Map<string, number>> {
    if (emails.length === 0) return new Map();
    const last = await c.all<{ email: string; last_ms: bigint }>(
      'SELECT email, epoch_ms(max(created_at)) AS last_ms FROM flow_sends WHERE org = $1 AND flow_id = $2 AND email IN (SELECT unnest($3::VARCHAR[])) GROUP BY email',
      [org, flowId, listValue(emails)],
    );
    return new Map(last.map((l) => [l.email, Number(l.last_ms)]));
  }

  /** Decisions and outbox rows (sent → pending, holdout → recorded) in the run's transaction. */
  private async record(c: Sql, org: string, flowId: string, triggerHash: string, decisions: Decision[], now: number): Promise<void> {
    const at = tsParam(now);
    await c.append({ table: 'flow_decisions' }, decisions, (a, d) => {
      a.appendVarchar(org);
      a.appendVarchar(flowId);
      appendNullable(a, d.email);
      appendNullable(a, d.identity);
      appendNullable(a, d.identityType);
      appendNullable(a, d.eventId);
      a.appendVarchar(d.outcome);
      appendNullable(a, d.variant);
      appendNullable(a, d.sendId);
      a.appendVarchar(triggerHash);
      appendNullable(a, d.reason);
      a.appendTimestampTZ(at);
    });
    const entered = decisions.filter((d) => d.outcome === 'sent' || d.outcome === 'holdout');
    await c.append({ table: 'flow_sends' }, entered, (a, d) => {
      a.appendVarchar(d.sendId!);
      a.appendVarchar(org);
      a.appendVarchar(flowId);
      a.appendVarchar(d.email!);
      a.appendVarchar(d.eventId!);
      appendNullable(a, d.variant);
      appendNullable(a, d.message?.channel ?? null);
      appendNullable(a, d.message ? JSON.stringify(d.message) : null);
      a.appendVarchar(triggerHash);
      a.appendVarchar(d.outcome === 'sent' ? 'pending' : 'holdout');
      a.appendInteger(0);
      a.appendNull();
      a.appendTimestampTZ(at);
      a.appendNull();
    });
  }

  private afterCommit(org: string, flowId: string, decisions: Decision[]): void {
    const sends: PendingSend[] = [];
    const holdouts: ContactKey[] = [];
    for (const d of decisions) {
      this.deps.metrics.flowDecisions.inc({ outcome: d.outcome });
      if (d.outcome === 'sent') {
        sends.push({ sendId: d.sendId!, org, flowId, email: d.email!, eventId: d.eventId!, variant: d.variant, message: d.message! });
      } else if (d.outcome === 'holdout') holdouts.push({ org, email: d.email! });
    }
    this.deps.dispatcher.enqueue(sends);
    if (holdouts.length > 0) this.deps.refreshProfiles(holdouts);
  }

  private async fail(flow: FlowRecord, reason: string): Promise<RunSummary> {
    this.deps.logger.warn({ org: flow.org, flow: flow.definition.id, reason }, 'flow run did not run its window');
    await this.deps.db.run('UPDATE flows SET last_run_at = $3, last_error = $4 WHERE org = $1 AND id = $2', [
      flow.org,
      flow.definition.id,
      tsParam(this.deps.ctx.clock.now()),
      reason,
    ]);
    await this.deps.flows.reload(flow.org, flow.definition.id);
    return { skipped: reason, rows: 0, decisions: [] };
  }
}

function str(value: unknown): string | null {
  return value == null ? null : String(value);
}

function appendNullable(a: { appendVarchar(v: string): void; appendNull(): void }, value: string | null): void {
  if (value === null) a.appendNull();
  else a.appendVarchar(value);
}
