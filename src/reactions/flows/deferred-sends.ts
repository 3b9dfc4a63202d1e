/**
 * Sends deferred by quiet hours (decide.ts, quiet-hours.ts): an outbox row with status `deferred` and its
 * `due_at`, the end of the contact's quiet hours. When it is due, the row is checked again, as a new entry
 * would be: a contact suppressed meanwhile is `suppressed`, one who unsubscribed from the flow's topic is
 * `unsubscribed`, one whose caps filled meanwhile is `frequency_capped`; otherwise it is `sent`. The row
 * becomes pending (or cancelled) in one transaction with a decision row saying so, while no run of the org
 * decides (runs and releases share the org's turn), and only a row still deferred changes.
 *
 * Exactly once across crashes: a crash before that transaction leaves the row deferred, released at the
 * next start; after it, the row is pending like any other, and the dispatcher's outbox rules apply (sent
 * on the next start if the process died before delivering it). An erased contact's rows are gone.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Context } from '../../core/context.js';
import { groupBy } from '../../core/domain.js';
import type { OrgStorage } from '../../db/org-storage.js';
import { suppressedAmong } from '../../events/compaction/tombstones.js';
import type { FrequencyCaps } from '../../generated/org.js';
import type { Metrics } from '../../ops/metrics.js';
import { type ConsentStore, topicsOf } from '../consent/consent-store.js';
import type { FlowStore } from './flow-store.js';
import { lookbackMs, SendCounts } from './frequency-caps.js';
import type { PendingSend, SendDispatcher } from './send-dispatcher.js';
import type { SendStore } from './send-store.js';

/** How often due orgs are looked at: a deferred send goes out within this of its due time. */
export const RELEASE_TICK_MS = 1000;

export class DeferredSends {
  /** Per org, when its next deferred send is due (orgs with none are absent). */
  private readonly due = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private releasing: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      orgs: OrgStorage;
      sends: SendStore;
      flows: Pick<FlowStore, 'get'>;
      consent: Pick<ConsentStore, 'unsubscribed'>;
      capsOf(org: string): FrequencyCaps;
      /** Runs `work` in the org's turn: no flow run of the org decides meanwhile (FlowRunner.exclusive). */
      exclusive<T>(org: string, work: () => Promise<T>): Promise<T>;
      dispatcher: Pick<SendDispatcher, 'enqueue'>;
      ctx: Context;
      metrics: Pick<Metrics, 'flowDecisions'>;
      logger: FastifyBaseLogger;
    },
  ) {}

  /** Sends of the org wait until `at` (a run deferred them, or a start found them). */
  noteDue(org: string, at: number): void {
    const known = this.due.get(org);
    if (known === undefined || at < known) this.due.set(org, at);
  }

  /** What earlier processes left deferred in these orgs (an org whose database does not open is loaded when it does). */
  async load(orgs: readonly string[]): Promise<void> {
    for (const org of orgs) {
      const next = await this.deps.sends.nextDeferred(org).catch((err: unknown) => {
        this.deps.logger.warn({ err, org }, 'reading deferred sends failed');
        return null;
      });
      if (next !== null) this.noteDue(org, next);
    }
  }

  start(): void {
    this.timer = setInterval(() => void this.releaseDue(), RELEASE_TICK_MS);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.releasing;
  }

  forgetOrg(org: string): void {
    this.due.delete(org);
  }

  /** Releases every org whose next deferred send is due (one pass at a time). */
  releaseDue(): Promise<void> {
    this.releasing ??= (async () => {
      const now = this.deps.ctx.clock.now();
      for (const [org, at] of [...this.due]) {
        if (at > now) continue;
        this.due.delete(org);
        await this.release(org).catch((err: unknown) => {
          this.noteDue(org, now + RELEASE_TICK_MS * 10);
          this.deps.logger.error({ err, org }, 'releasing deferred sends failed; tried again shortly');
        });
      }
    })().finally(() => (this.releasing = undefined));
    return this.releasing;
  }

  /** The org's deferred sends due now, checked again and released; returns how many became pending. */
  release(org: string): Promise<number> {
    return this.deps.exclusive(org, async () => {
      const now = this.deps.ctx.clock.now();
      const due = await this.deps.sends.dueDeferred(org, now);
      const outcomes: Array<{ sendId: string; outcome: string; reason: string | null }> = [];
      for (const [flowId, rows] of groupBy(due, (r) => r.flowId)) outcomes.push(...(await this.check(org, flowId, rows, now)));
      const pending = await this.deps.sends.releaseDeferred(org, outcomes, now);
      for (const o of outcomes) this.deps.metrics.flowDecisions.inc({ outcome: o.outcome });
      this.deps.dispatcher.enqueue(due.filter((send) => pending.has(send.sendId)));
      const next = await this.deps.sends.nextDeferred(org);
      if (next !== null) this.noteDue(org, next);
      return pending.size;
    });
  }

  private async check(org: string, flowId: string, rows: Array<PendingSend & { transactional: boolean }>, now: number) {
    let flow;
    try {
      flow = this.deps.flows.get(org, flowId).definition;
    } catch {
      return rows.map((r) => ({ sendId: r.sendId, outcome: 'failed', reason: 'the flow was deleted during quiet hours' }));
    }
    const emails = [...new Set(rows.map((r) => r.email))];
    const suppressed = await suppressedAmong(this.deps.orgs.org(org), emails);
    const unsubscribed = await this.deps.consent.unsubscribed(org, emails, topicsOf(flow));
    const rules = { org: this.deps.capsOf(org), flow: flow.frequencyCap, flowId, transactional: flow.transactional ?? false };
    // Sends made since (pending or delivered), not other deferred ones: those are checked as they are released.
    const counts = new SendCounts(rules, await this.deps.sends.recentSends(org, emails, now - lookbackMs(rules), ['pending', 'delivered']));
    return rows.map((r) => {
      const later = (outcome: string, why: string) => ({ sendId: r.sendId, outcome, reason: `at the end of quiet hours: ${why}` });
      if (suppressed.has(r.email)) return later('suppressed', 'the contact was erased with suppress');
      const [topic] = unsubscribed.get(r.email) ?? [];
      if (topic) return later('unsubscribed', `the contact is unsubscribed from topic ${topic.topic} (${topic.source})`);
      const capped = counts.capped(r.email, r.message.channel, now);
      if (capped) return later('frequency_capped', capped);
      counts.add(r.email, r.message.channel, now);
      return { sendId: r.sendId, outcome: 'sent', reason: null };
    });
  }
}
