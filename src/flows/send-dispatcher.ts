/**
 * Delivers outbox rows (flow_sends with status pending) through their channel, with retries, and
 * records how each ended. A row is only ever written pending in the run's transaction, so:
 * - a crash before delivery leaves it pending: it is delivered on the next start;
 * - a crash after delivery but before it is marked delivers it once more on the next start, with the
 *   same send id (webhook-id, Message-ID), so the receiver can drop the repeat; the outbox channel
 *   drops it itself.
 * Marks are batched into one UPDATE per flush: sends finish at thousands per second.
 */
import { listValue } from '@duckdb/node-api';
import type { FastifyBaseLogger } from 'fastify';
import { deliverWithRetries, type RetryPolicy } from '../channels/deliver-with-retries.js';
import type { Channels } from '../channels/open-channels.js';
import type { Delivery, DeliveryResult, RenderedMessage } from '../channels/types.js';
import type { Context } from '../context.js';
import { tsParam } from '../db/database.js';
import type { OrgStorage } from '../storage/org-storage.js';
import type { Metrics } from '../ops/metrics.js';

export interface PendingSend {
  sendId: string;
  org: string;
  flowId: string;
  email: string;
  eventId: string;
  variant: string | null;
  message: RenderedMessage;
}

interface Finished {
  sendId: string;
  org: string;
  email: string;
  result: DeliveryResult;
  at: number;
}

const MAX_IN_FLIGHT = 64;

class Closing extends Error {}

export class SendDispatcher {
  // A queue read from `head` (Array#shift is O(n): a run can queue tens of thousands of sends).
  private queue: PendingSend[] = [];
  private head = 0;
  private readonly queued = new Set<string>();
  private inFlight = 0;
  private finished: Finished[] = [];
  private flushing: Promise<void> | undefined;
  private closing = false;
  private readonly sleeps = new Set<() => void>();
  private idleWaiters: (() => void)[] = [];
  /** Deleted orgs: their sends are dropped, not delivered or recorded. */
  private readonly droppedOrgs = new Set<string>();

  constructor(
    private readonly deps: {
      orgs: OrgStorage;
      ctx: Context;
      channels: Channels;
      policy: RetryPolicy;
      metrics: Metrics;
      logger: FastifyBaseLogger;
      /** Contacts whose profile changed (campaigns_received, flow_variant_membership). */
      onDelivered(org: string, emails: string[]): void;
    },
  ) {}

  /** Queues what an earlier process left pending in these orgs (crash or shutdown mid-delivery). */
  async resumePending(slugs: readonly string[]): Promise<number> {
    let resumed = 0;
    for (const slug of slugs) {
      const rows = await this.deps.orgs.org(slug).all<{ send_id: string; org: string; flow_id: string; email: string; event_id: string; variant: string | null; content: string }>(
        "SELECT send_id, org, flow_id, email, event_id, variant, content FROM flow_sends WHERE status = 'pending' ORDER BY created_at",
      );
      this.enqueue(
        rows.map((r) => ({ sendId: r.send_id, org: r.org, flowId: r.flow_id, email: r.email, eventId: r.event_id, variant: r.variant, message: JSON.parse(r.content) as RenderedMessage })),
      );
      resumed += rows.length;
    }
    return resumed;
  }

  enqueue(sends: PendingSend[]): void {
    for (const send of sends) {
      if (this.closing || this.queued.has(send.sendId) || this.droppedOrgs.has(send.org)) continue;
      this.queued.add(send.sendId);
      this.queue.push(send);
    }
    this.pump();
  }

  /**
   * The org was deleted: its queued sends are dropped, and one waiting for a retry is not attempted again
   * (an attempt already under way ends as it ends; its result is not recorded, the database being gone).
   */
  dropOrg(org: string): void {
    this.droppedOrgs.add(org);
    const kept = this.queue.slice(this.head).filter((send) => {
      if (send.org !== org) return true;
      this.queued.delete(send.sendId);
      return false;
    });
    this.queue = kept;
    this.head = 0;
    this.finished = this.finished.filter((f) => f.org !== org);
    this.wakeIdle();
  }

  /** Sends queued, in flight or waiting for a retry. */
  get pending(): number {
    return this.queued.size;
  }

  /** Resolves when nothing is queued, in flight or unflushed (tests, benchmarks). */
  async idle(): Promise<void> {
    while (this.queued.size > 0 || this.inFlight > 0 || this.finished.length > 0 || this.flushing) {
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
      await this.flushing;
    }
  }

  /** Stops taking work; deliveries waiting for a retry stay pending for the next start. */
  async close(): Promise<void> {
    this.closing = true;
    this.queue = [];
    this.head = 0;
    for (const wake of this.sleeps) wake();
    while (this.inFlight > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await this.flush();
  }

  private pump(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.head < this.queue.length) {
      const send = this.queue[this.head++]!;
      if (this.head === this.queue.length) {
        this.queue = [];
        this.head = 0;
      }
      this.inFlight++;
      void this.deliver(send).finally(() => {
        this.inFlight--;
        this.queued.delete(send.sendId);
        this.pump();
        this.wakeIdle();
      });
    }
  }

  private async deliver(send: PendingSend): Promise<void> {
    const channel = this.deps.channels.channelFor(send.message.channel);
    let result: DeliveryResult;
    if (!channel) {
      result = { kind: 'failed', attempts: 0, reason: `channel ${send.message.channel} is not configured (SMTP_URL for email)` };
    } else {
      const delivery: Delivery = { ...send };
      try {
        const sleep = async (ms: number) => {
          await this.sleep(ms);
          if (this.droppedOrgs.has(send.org)) throw new Closing();
        };
        result = await deliverWithRetries(channel, delivery, this.deps.policy, { sleep, random: Math.random });
      } catch (error) {
        if (error instanceof Closing) return;
        result = { kind: 'failed', attempts: 1, reason: `delivery error: ${(error as Error).message}` };
      }
    }
    if (this.droppedOrgs.has(send.org)) return;
    this.deps.metrics.sends.inc({ channel: send.message.channel, status: result.kind });
    this.finished.push({ sendId: send.sendId, org: send.org, email: send.email, result, at: this.deps.ctx.clock.now() });
    this.scheduleFlush();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleeps.delete(wake);
        if (this.closing) reject(new Closing());
        else resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleeps.add(wake);
    });
  }

  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = this.flush()
      .catch((err: unknown) => this.deps.logger.error({ err }, 'recording send results failed; they stay pending and are retried on restart'))
      .finally(() => {
        this.flushing = undefined;
        if (this.finished.length > 0) this.scheduleFlush();
        this.wakeIdle();
      });
  }

  private async flush(): Promise<void> {
    const finished = this.finished;
    this.finished = [];
    const byOrg = new Map<string, Finished[]>();
    for (const f of finished) byOrg.set(f.org, [...(byOrg.get(f.org) ?? []), f]);
    for (const [org, batch] of byOrg) await this.record(org, batch);
  }

  /** One UPDATE per org database for the sends that finished. */
  private async record(org: string, batch: Finished[]): Promise<void> {
    const statuses = batch.map((f) => f.result.kind);
    const reasons = batch.map((f) => (f.result.kind === 'delivered' ? null : f.result.reason));
    await this.deps.orgs.org(org).run(
      `UPDATE flow_sends AS s
          SET status = u.status, attempts = u.attempts, last_error = u.reason,
              sent_at = CASE WHEN u.status = 'delivered' THEN $5 END
         FROM (SELECT unnest($1::VARCHAR[]) AS send_id, unnest($2::VARCHAR[]) AS status,
                      unnest($3::INTEGER[]) AS attempts, unnest($4::VARCHAR[]) AS reason) AS u
        WHERE s.send_id = u.send_id`,
      [
        listValue(batch.map((f) => f.sendId)),
        listValue(statuses),
        listValue(batch.map((f) => f.result.attempts)),
        listValue(reasons),
        tsParam(batch[batch.length - 1]!.at),
      ],
    );
    const delivered = batch.filter((f) => f.result.kind === 'delivered').map((f) => f.email);
    if (delivered.length > 0) this.deps.onDelivered(org, delivered);
  }

  private wakeIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }
}
