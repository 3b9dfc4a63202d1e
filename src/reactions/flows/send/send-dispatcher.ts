/**
 * Delivers outbox rows (flow_sends with status pending) through their channel, with retries, and
 * records how each ended. A row is only ever written pending in the run's transaction, so:
 * - a crash before delivery leaves it pending: it is delivered on the next start;
 * - a crash after delivery but before it is recorded delivers it once more on the next start, with
 *   the same send id (webhook-id, Message-ID), so the receiver can drop the repeat; the outbox channel
 *   drops it itself.
 * How many the second case can be is bounded by construction: a send holds one of its channel's slots
 * from its request until its outcome is committed (send-outcomes.ts), an org at most SEND_CONCURRENCY of
 * them, so at most that many of an org's sends per channel (CHANNEL_CONCURRENCY of all orgs') are ever
 * sent but not recorded, however slow the database. Between retries a
 * send holds no slot (nothing of it is in flight then).
 */
import type { FastifyBaseLogger } from 'fastify';
import { deliverWithRetries, type RetryPolicy } from '../../channels/deliver-with-retries.js';
import type { Channels } from '../../channels/open-channels.js';
import type { ChannelName, Delivery, DeliveryResult } from '../../channels/types.js';
import type { Context } from '../../../core/context.js';
import type { Metrics } from '../../../ops/metrics.js';
import { DeliverySlots } from './delivery-slots.js';
import { type FlowSendOutcome, SendOutcomes } from './send-outcomes.js';
import type { PendingSend, SendStore } from '../store/send-store.js';

export type { PendingSend } from '../store/send-store.js';

/**
 * Slots of one org per channel: a kill -9 re-sends at most this many of an org's sends on a channel (the
 * ones in flight). It also bounds an org's throughput, to about 16 ÷ (2 × its UPDATE time) sends per
 * second: the slots settle into two groups, each sending while the other's outcomes are written (figures
 * in docs/design.md).
 */
export const SEND_CONCURRENCY = 16;
/**
 * Slots of all orgs per channel: four orgs at their full share. So one org, or three, whose receiver is
 * slow leave slots free for the others' sends, which go out at once (delivery-slots.ts); a kill -9 re-sends
 * at most this many of the channel's sends in all.
 */
export const CHANNEL_CONCURRENCY = 4 * SEND_CONCURRENCY;

class Closing extends Error {}

export class SendDispatcher {
  /** Sends queued, in flight or waiting for a retry (a send id is taken once until it ends). */
  private readonly queued = new Map<string, PendingSend>();
  private readonly slots = new Map<ChannelName, DeliverySlots>();
  private readonly outcomes: SendOutcomes;
  private closing = false;
  private readonly sleeps = new Set<() => void>();
  /** Queued sends of erased contacts (dropContact) and archived flows (dropFlow): not attempted, forgotten when they end. */
  private readonly cancelled = new Set<string>();
  private idleWaiters: (() => void)[] = [];
  /** Deleted orgs: their sends are dropped, not delivered or recorded. */
  private readonly droppedOrgs = new Set<string>();

  constructor(
    private readonly deps: {
      sends: SendStore;
      ctx: Context;
      channels: Channels;
      policy: RetryPolicy;
      metrics: Metrics;
      logger: FastifyBaseLogger;
      /** Sends delivered: their contacts' profiles changed (campaigns_received, flow_variant_membership). */
      onDelivered(org: string, delivered: FlowSendOutcome[]): void;
    },
  ) {
    this.outcomes = new SendOutcomes(deps);
  }

  /** Queues what an earlier process left pending in these orgs (crash or shutdown mid-delivery). */
  async resumePending(slugs: readonly string[]): Promise<number> {
    let resumed = 0;
    for (const slug of slugs) {
      const pending = await this.deps.sends.pending(slug);
      this.enqueue(pending);
      resumed += pending.length;
    }
    return resumed;
  }

  enqueue(sends: PendingSend[]): void {
    for (const send of sends) {
      if (this.closing || this.queued.has(send.sendId) || this.droppedOrgs.has(send.org)) continue;
      this.queued.set(send.sendId, send);
      const slots = this.slotsFor(send.message.channel);
      slots.wait(send.org, { start: () => void this.deliver(send, slots), cancel: () => this.ended(send) });
    }
  }

  /**
   * The org was deleted: its queued sends are dropped, and one waiting for a retry is not attempted again
   * (an attempt already under way ends as it ends; its result is not recorded, the database being gone).
   */
  dropOrg(org: string): void {
    this.droppedOrgs.add(org);
    this.outcomes.drop(org);
    for (const slots of this.slots.values()) slots.cancel(org);
  }

  /**
   * The contact was erased (its outbox rows are gone): its sends still queued or waiting for a retry
   * are not attempted; an attempt under way ends as it ends.
   */
  dropContact(org: string, email: string): void {
    for (const send of this.queued.values()) if (send.org === org && send.email === email) this.cancelled.add(send.sendId);
  }

  /**
   * The flow was archived (its pending sends are cancelled in the database): its sends still queued or
   * waiting for a retry are not attempted; an attempt under way ends as it ends, and is recorded.
   */
  dropFlow(org: string, flowId: string): void {
    for (const send of this.queued.values()) if (send.org === org && send.flowId === flowId) this.cancelled.add(send.sendId);
  }

  /** Sends queued, in flight or waiting for a retry. */
  get pending(): number {
    return this.queued.size;
  }

  /** Resolves when nothing is queued, in flight, waiting for a retry or being recorded (tests, benchmarks). */
  async idle(): Promise<void> {
    while (this.queued.size > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops taking work; deliveries waiting for a retry stay pending for the next start. Sends in flight
   * end and are recorded (a recording that fails now is not tried again: see send-outcomes.ts).
   */
  async close(): Promise<void> {
    this.closing = true;
    this.outcomes.close();
    for (const slots of this.slots.values()) slots.cancel();
    for (const wake of this.sleeps) wake();
    await this.idle();
  }

  private slotsFor(channel: ChannelName): DeliverySlots {
    let slots = this.slots.get(channel);
    if (!slots) this.slots.set(channel, (slots = new DeliverySlots(CHANNEL_CONCURRENCY, SEND_CONCURRENCY)));
    return slots;
  }

  /** Runs with a slot of `slots` held; gives it back once the outcome is recorded. */
  private async deliver(send: PendingSend, slots: DeliverySlots): Promise<void> {
    let holding = true;
    // Between attempts nothing of this send is in flight: its slot serves another send meanwhile.
    const sleep = async (ms: number) => {
      slots.release(send.org);
      holding = false;
      await this.sleep(ms);
      if (this.droppedOrgs.has(send.org) || this.cancelled.has(send.sendId) || !(await slots.reacquire(send.org))) throw new Closing();
      holding = true;
    };
    try {
      // Its contact was erased while it waited for a slot: the finally below gives the slot back.
      if (this.cancelled.has(send.sendId)) return;
      const result = await this.attempt(send, sleep);
      if (result === undefined || this.droppedOrgs.has(send.org)) return;
      this.deps.metrics.sends.inc({ channel: send.message.channel, status: result.kind });
      await this.outcomes.record(send.org, { sendId: send.sendId, email: send.email, flowId: send.flowId, variant: send.variant, result, at: this.deps.ctx.clock.now() });
    } finally {
      if (holding) slots.release(send.org);
      this.ended(send);
    }
  }

  /** Every attempt of one send; undefined when the service or the org went while it waited for a retry. */
  private async attempt(send: PendingSend, sleep: (ms: number) => Promise<void>): Promise<DeliveryResult | undefined> {
    try {
      const channel = this.deps.channels.channelFor(send.message.channel);
      if (!channel) return { kind: 'failed', attempts: 0, reason: `channel ${send.message.channel} is not configured (SMTP_URL for email)` };
      const delivery: Delivery = { ...send };
      return await deliverWithRetries(channel, delivery, this.deps.policy, { sleep, random: Math.random });
    } catch (error) {
      if (error instanceof Closing) return undefined;
      return { kind: 'failed', attempts: 1, reason: `delivery error: ${(error as Error).message}` };
    }
  }

  private ended(send: PendingSend): void {
    this.queued.delete(send.sendId);
    this.cancelled.delete(send.sendId);
    this.wakeIdle();
  }

  private sleep(ms: number): Promise<void> {
    // A retry wait that begins after close() began (an attempt failed while the service stopped) ends at
    // once: close() woke only the waits under way, and a backoff may be an hour.
    if (this.closing) return Promise.reject(new Closing());
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

  private wakeIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }
}
