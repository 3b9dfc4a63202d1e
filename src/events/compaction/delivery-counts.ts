/**
 * What became of an org's events since a time, per environment and event name: stored, held for an
 * identity, quarantined (with each quarantine's reasons), and tracking-plan violations. One reader, so a
 * partner's status (routes/http/status.ts) and the org's quarantine alert (reactions/alerts/) count alike.
 * A pending event is named from its body as `eventNameOf` names a stored one, in JS, not in a second
 * spelling in SQL.
 */
import { parseProblemDetails } from '../../core/errors.js';
import type { Database } from '../../db/sql.js';
import { eventNameOf } from '../log/event-facts.js';

export interface DeliveryCounts {
  stored: number;
  held: number;
  quarantined: number;
  /** Of the quarantined, those held then never identified (`identity_unresolved`): they had been accepted. */
  unresolved: number;
  violations: number;
  /**
   * Quarantine codes with their paths and messages → count; with `violations`, also `plan_violation
   * <reason>` of events stored under observe (under enforce the quarantine row has them).
   */
  reasons: Map<string, number>;
}

export interface NameDelivery {
  environment: string;
  eventName: string;
  /** Since `since`. */
  window: DeliveryCounts;
  /** Since `recentSince` (a part of the window). */
  recent: DeliveryCounts;
}

export interface DeliveryWindow {
  /** Epoch ms. */
  since: number;
  /** Epoch ms, at or after `since`; default `since`. */
  recentSince?: number;
  /** One environment only; default both. */
  environment?: string;
  /** Read plan violations too (the alert counts quarantines only). */
  violations?: boolean;
}

/** Rows read per table at most: a window's quarantine of more is counted from its first rows. */
const MAX_ROWS = 100_000;

export const noDeliveries = (): DeliveryCounts => ({ stored: 0, held: 0, quarantined: 0, unresolved: 0, violations: 0, reasons: new Map() });

export async function deliveryCounts(db: Pick<Database, 'all'>, window: DeliveryWindow): Promise<NameDelivery[]> {
  const params = [new Date(window.since).toISOString(), new Date(window.recentSince ?? window.since).toISOString(), window.environment ?? null];
  const where = 'received_at >= $1::TIMESTAMPTZ AND ($3::VARCHAR IS NULL OR environment = $3)';
  const recent = 'received_at >= $2::TIMESTAMPTZ AS recent';
  const nameParts = (json: string) => `${json}->>'$.type' AS type, ${json}->>'$.event' AS event, ${json}->>'$.properties.eventName' AS custom`;
  const [stored, held, quarantined, violations] = await Promise.all([
    db.all<{ environment: string; name: string; recent: boolean; n: bigint }>(`SELECT environment, event_name AS name, ${recent}, count(*) AS n FROM events WHERE ${where} GROUP BY ALL`, params),
    db.all<NameParts & { environment: string; recent: boolean; n: bigint }>(`SELECT environment, ${nameParts('body')}, ${recent}, count(*) AS n FROM pending_identity WHERE ${where} GROUP BY ALL`, params),
    db.all<NameParts & { environment: string; code: string; errors: string; recent: boolean }>(
      `SELECT environment, ${nameParts('raw')}, code, errors::VARCHAR AS errors, ${recent} FROM quarantine WHERE ${where} LIMIT ${MAX_ROWS}`,
      params,
    ),
    window.violations
      ? db.all<{ environment: string; name: string; mode: string; reasons: string; recent: boolean }>(
          `SELECT environment, event_name AS name, mode, reasons::VARCHAR AS reasons, ${recent} FROM plan_violations WHERE ${where} LIMIT ${MAX_ROWS}`,
          params,
        )
      : [],
  ]);
  const byName = new Map<string, NameDelivery>();
  const add = (environment: string, eventName: string, isRecent: boolean, change: (c: DeliveryCounts) => void) => {
    const key = `${environment}\u0000${eventName}`;
    let entry = byName.get(key);
    if (!entry) byName.set(key, (entry = { environment, eventName, window: noDeliveries(), recent: noDeliveries() }));
    change(entry.window);
    if (isRecent) change(entry.recent);
  };
  const count = (reasons: Map<string, number>, text: string) => reasons.set(text, (reasons.get(text) ?? 0) + 1);
  for (const r of stored) add(r.environment, r.name, r.recent, (c) => (c.stored += Number(r.n)));
  for (const r of held) add(r.environment, nameOf(r), r.recent, (c) => (c.held += Number(r.n)));
  for (const q of quarantined) {
    const errors = parseProblemDetails(q.errors);
    add(q.environment, nameOf(q), q.recent, (c) => {
      c.quarantined++;
      if (q.code === 'identity_unresolved') c.unresolved++;
      for (const e of errors) count(c.reasons, `${q.code} ${e.path} ${e.message}`);
    });
  }
  for (const v of violations) {
    const reasons = v.mode === 'observe' ? (JSON.parse(v.reasons) as string[]) : [];
    add(v.environment, v.name, v.recent, (c) => {
      c.violations++;
      for (const r of reasons) count(c.reasons, `plan_violation ${r}`);
    });
  }
  return [...byName.values()];
}

/** The most frequent reasons first (then by text), at most `limit`. */
export function topReasons(reasons: ReadonlyMap<string, number>, limit: number): Array<{ reason: string; count: number }> {
  return [...reasons].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, limit).map(([reason, count]) => ({ reason, count }));
}

interface NameParts {
  type: string | null;
  event: string | null;
  custom: string | null;
}

function nameOf(parts: NameParts): string {
  return parts.type === null ? 'unknown' : eventNameOf({ type: parts.type, event: parts.event, properties: { eventName: parts.custom } });
}
