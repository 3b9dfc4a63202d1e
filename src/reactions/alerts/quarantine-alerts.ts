/**
 * An alert when quality drops (issue 42): an org sets a webhook, a threshold, a minimum of events and a
 * window; every ALERT_CHECK_MS the share of each event name's events (per environment) that were
 * quarantined in the window is computed, and when it crosses the threshold from below, with at least
 * `minEvents` events, one signed webhook (as flow webhooks are signed: the org's webhook secret) goes out
 * with the counts and the top reasons. Once per crossing: the share must fall back to the threshold or
 * below before the next one alerts. A delivery that fails is tried again at the next check while the
 * crossing lasts. This class is the one owner of the `quarantine_alerts` table. What was alerted is kept
 * in memory: after a restart, a crossing still under way alerts once more.
 */
import type { Context } from '../../core/context.js';
import type { OrgStorage } from '../../db/org-storage.js';
import { deliveryCounts, topReasons } from '../../events/compaction/delivery-counts.js';
import type { Channel } from '../channels/types.js';

export interface QuarantineAlert {
  url: string;
  threshold: number;
  minEvents: number;
  windowSeconds: number;
}

const TOP_REASONS = 5;

export class QuarantineAlerts {
  /** Per org, the (environment, event name) pairs above the threshold, and whether their alert went out. */
  private readonly above = new Map<string, Map<string, { delivered: boolean }>>();

  constructor(
    private readonly deps: { orgs: OrgStorage; ctx: Context; onError: (error: unknown, org: string) => void },
  ) {}

  async get(org: string): Promise<QuarantineAlert | undefined> {
    const [row] = await this.deps.orgs.org(org).all<{ url: string; threshold: number; min_events: number; window_seconds: number }>('SELECT url, threshold, min_events, window_seconds FROM quarantine_alerts');
    return row ? { url: row.url, threshold: row.threshold, minEvents: row.min_events, windowSeconds: row.window_seconds } : undefined;
  }

  async put(org: string, alert: QuarantineAlert): Promise<void> {
    await this.deps.orgs.org(org).transaction(async (c) => {
      await c.run('DELETE FROM quarantine_alerts');
      await c.run('INSERT INTO quarantine_alerts VALUES ($1, $2, $3, $4)', [alert.url, alert.threshold, alert.minEvents, alert.windowSeconds]);
    });
  }

  async remove(org: string): Promise<boolean> {
    this.above.delete(org);
    const deleted = await this.deps.orgs.org(org).all('DELETE FROM quarantine_alerts RETURNING 1');
    return deleted.length > 0;
  }

  /** One pass over the orgs: each one's alert, if it has one, sent through `channel` (a failing org is reported and the others go on). */
  async check(orgs: readonly string[], channel: Pick<Channel, 'attempt'>): Promise<void> {
    for (const org of orgs) {
      try {
        const alert = await this.get(org);
        if (alert) await this.checkOrg(org, alert, channel);
        else this.above.delete(org);
      } catch (error) {
        this.deps.onError(error, org);
      }
    }
  }

  private async checkOrg(org: string, alert: QuarantineAlert, channel: Pick<Channel, 'attempt'>): Promise<void> {
    const now = this.deps.ctx.clock.now();
    const counts = new Map<string, { environment: string; eventName: string; accepted: number; quarantined: number; reasons: Map<string, number> }>();
    for (const { environment, eventName, window } of await deliveryCounts(this.deps.orgs.org(org), { since: now - alert.windowSeconds * 1000 })) {
      counts.set(`${environment}\u0000${eventName}`, { environment, eventName, accepted: window.stored + window.held, quarantined: window.quarantined, reasons: window.reasons });
    }
    const above = this.above.get(org) ?? new Map<string, { delivered: boolean }>();
    this.above.set(org, above);
    for (const [key, c] of counts) {
      const total = c.accepted + c.quarantined;
      const share = total === 0 ? 0 : c.quarantined / total;
      if (total < alert.minEvents || share <= alert.threshold) {
        above.delete(key);
        continue;
      }
      const crossing = above.get(key) ?? { delivered: false };
      above.set(key, crossing);
      if (crossing.delivered) continue;
      const body = {
        type: 'quarantine.share_crossed',
        org,
        environment: c.environment,
        eventName: c.eventName,
        windowSeconds: alert.windowSeconds,
        threshold: alert.threshold,
        events: total,
        quarantined: c.quarantined,
        accepted: c.accepted,
        share: Math.round(share * 10_000) / 10_000,
        topReasons: topReasons(c.reasons, TOP_REASONS),
        at: new Date(now).toISOString(),
      };
      const outcome = await channel.attempt({
        sendId: `alert_${org}_${now}_${Buffer.from(key).toString('base64url')}`.slice(0, 200),
        org,
        flowId: '',
        variant: null,
        email: '',
        eventId: '',
        message: { channel: 'webhook', url: alert.url, body },
      });
      crossing.delivered = outcome.kind === 'delivered';
    }
    for (const key of [...above.keys()]) if (!counts.has(key)) above.delete(key);
  }
}
