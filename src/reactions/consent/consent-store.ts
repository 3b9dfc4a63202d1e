/**
 * Subscription topics and each contact's consent per topic (SPEC 8, safe sending): every read and write
 * of `topics`, `contact_consent` and `consent_events_applied` goes through here.
 *
 * Consent changes come from three places, and the latest change (by when it happened) wins whatever its
 * source: the admin API (`PUT …/contacts/consent`), the unsubscribe link, and events whose traits carry
 * `subscriptions: { "<topic>": "subscribed" | "unsubscribed" }` (their event time; applied here, from
 * the events made visible since the last application, before consent is read, so a run never decides on
 * a stale state). A contact with no change for a topic has the topic's default.
 *
 * `all` is a topic every org has (default subscribed): a flow without a topic checks it, every
 * non-transactional flow honours an unsubscribe from it.
 *
 * A contact erased with suppress gets no consent row again, from any of the three: its events are kept
 * out by compaction, and `setConsent` checks its tombstone in the transaction that would write, so a
 * change racing the erasure is either deleted by it or sees the tombstone (tombstones.ts).
 */
import { listValue } from '@duckdb/node-api';
import { normalizeEmail } from '../../core/domain.js';
import { microsParam, tsParam } from '../../db/database.js';
import { suppressedAmong } from '../../events/compaction/tombstones.js';
import type { Database, Sql } from '../../db/sql.js';
import type { OrgStorage } from '../../db/org-storage.js';

export type ConsentStatus = 'subscribed' | 'unsubscribed';
export type ConsentSource = 'admin' | 'link' | 'event';
/** What a consent change came to: recorded (or older than the one recorded), or nothing for a suppressed contact. */
export type ConsentWrite = 'recorded' | 'suppressed';

export interface Topic {
  topic: string;
  name: string;
  default: ConsentStatus;
  createdAt: string;
  updatedAt: string;
}

export interface ContactConsent {
  topic: string;
  status: ConsentStatus;
  /** Where the status comes from: a change (admin, link, event) or the topic's default. */
  source: ConsentSource | 'default';
  changedAt: string | null;
}

/** The topic every org has: a flow without a topic checks it; unsubscribing from it stops all marketing. */
export const ALL_TOPIC = 'all';
const ALL: Omit<Topic, 'createdAt' | 'updatedAt'> = { topic: ALL_TOPIC, name: 'All marketing', default: 'subscribed' };
export const TOPIC_PATTERN = '^[a-z][a-z0-9_]{0,63}$';

/** The topics whose unsubscribes stop a flow: its own (`all` when it names none) and `all`; none for a transactional flow. */
export function topicsOf(flow: { topic?: string; transactional?: boolean }): string[] {
  return flow.transactional ? [] : [...new Set([flow.topic ?? ALL_TOPIC, ALL_TOPIC])];
}

/**
 * Applies consent from the events made visible since the last application (see above), then moves the
 * position. The first application reads every stored event; `contains` spares parsing those without
 * the word (nearly all).
 */
const APPLY_EVENTS = [
  `INSERT INTO contact_consent BY NAME
   SELECT email, topic, status, 'event' AS source, event_time AS changed_at FROM (
     SELECT email, event_time, topic, subs->>topic AS status FROM (
       SELECT email, event_time, raw->'$.traits.subscriptions' AS subs, unnest(json_keys(raw->'$.traits.subscriptions')) AS topic
         FROM events
        WHERE visible_at > coalesce((SELECT max(through) FROM consent_events_applied), '-infinity'::TIMESTAMPTZ)
          AND email IS NOT NULL AND contains(raw::VARCHAR, '"subscriptions"')
          AND json_type(raw->'$.traits.subscriptions') = 'OBJECT'))
    WHERE status IN ('subscribed', 'unsubscribed') AND regexp_full_match(topic, '${TOPIC_PATTERN.slice(1, -1)}')
   QUALIFY row_number() OVER (PARTITION BY email, topic ORDER BY event_time DESC) = 1
   ON CONFLICT (email, topic) DO UPDATE SET status = excluded.status, source = excluded.source, changed_at = excluded.changed_at
    WHERE excluded.changed_at > contact_consent.changed_at`,
  'DELETE FROM consent_events_applied',
  'INSERT INTO consent_events_applied SELECT max(visible_at) FROM events HAVING max(visible_at) IS NOT NULL',
];

export class ConsentStore {
  constructor(private readonly orgs: OrgStorage) {}

  async topics(org: string): Promise<Topic[]> {
    const rows = await this.orgs.org(org).all<{ topic: string; name: string; default_status: ConsentStatus; created_at: Date; updated_at: Date }>(
      'SELECT topic, name, default_status, created_at, updated_at FROM topics ORDER BY topic',
    );
    const stored = rows.map((r) => ({ topic: r.topic, name: r.name, default: r.default_status, createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString() }));
    return stored.some((t) => t.topic === ALL_TOPIC) ? stored : [{ ...ALL, createdAt: new Date(0).toISOString(), updatedAt: new Date(0).toISOString() }, ...stored];
  }

  async topic(org: string, topic: string): Promise<Topic | undefined> {
    return (await this.topics(org)).find((t) => t.topic === topic);
  }

  /** Creates or changes a topic; `created` when it is new. */
  async putTopic(org: string, topic: string, value: { name: string; default: ConsentStatus }, now: number): Promise<{ topic: Topic; created: boolean }> {
    const existed = (await this.orgs.org(org).all('SELECT 1 FROM topics WHERE topic = $1', [topic])).length > 0;
    await this.orgs.org(org).run(
      `INSERT INTO topics VALUES ($1, $2, $3, $4, $4)
       ON CONFLICT (topic) DO UPDATE SET name = excluded.name, default_status = excluded.default_status, updated_at = excluded.updated_at`,
      [topic, value.name, value.default, tsParam(now)],
    );
    return { topic: (await this.topic(org, topic))!, created: !existed };
  }

  /**
   * Deletes a topic's definition; false when there was none. Contacts' recorded choices for it stay: a
   * topic created again under the same name finds every unsubscribe where it was (one is never forgotten).
   */
  async deleteTopic(org: string, topic: string): Promise<boolean> {
    return (await this.orgs.org(org).all('DELETE FROM topics WHERE topic = $1 RETURNING topic', [topic])).length > 0;
  }

  /**
   * Records a change of one contact's consent to one topic, unless a later change is recorded already;
   * `suppressed`, recording nothing, when the contact was erased with suppress. One transaction: the
   * org's database runs it whole between an erasure's own (the tombstone, then the deletion).
   */
  async setConsent(org: string, change: { email: string; topic: string; status: ConsentStatus; source: ConsentSource; at: number }): Promise<ConsentWrite> {
    const email = normalizeEmail(change.email);
    return this.orgs.org(org).transaction(async (c) => {
      if ((await suppressedAmong(c, [email])).size > 0) return 'suppressed';
      await c.run(
        `INSERT INTO contact_consent VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (email, topic) DO UPDATE SET status = excluded.status, source = excluded.source, changed_at = excluded.changed_at
          WHERE excluded.changed_at >= contact_consent.changed_at`,
        [email, change.topic, change.status, change.source, tsParam(change.at)],
      );
      return 'recorded';
    });
  }

  /** Per contact, the topics among `topics` that the contact is unsubscribed from (defaults included). */
  async unsubscribed(org: string, emails: readonly string[], topics: readonly string[]): Promise<Map<string, Array<{ topic: string; source: ConsentSource | 'default' }>>> {
    const result = new Map<string, Array<{ topic: string; source: ConsentSource | 'default' }>>();
    if (emails.length === 0 || topics.length === 0) return result;
    const db = this.orgs.org(org);
    const [orgTopics] = await Promise.all([this.topics(org), applyEvents(db)]);
    const defaults = new Map(orgTopics.map((t) => [t.topic, t.default]));
    const rows = await db.all<{ email: string; topic: string; status: ConsentStatus; source: ConsentSource }>(
      'SELECT email, topic, status, source FROM contact_consent WHERE email IN (SELECT unnest($1::VARCHAR[])) AND topic IN (SELECT unnest($2::VARCHAR[]))',
      [listValue([...emails]), listValue([...topics])],
    );
    const changed = new Map(rows.map((r) => [`${r.email}\u0000${r.topic}`, r]));
    for (const email of emails) {
      for (const topic of topics) {
        const change = changed.get(`${email}\u0000${topic}`);
        const status = change?.status ?? defaults.get(topic) ?? 'subscribed';
        if (status !== 'unsubscribed') continue;
        const list = result.get(email) ?? [];
        list.push({ topic, source: change?.source ?? 'default' });
        result.set(email, list);
      }
    }
    return result;
  }

  /** An erased contact's consent changes go, in the erasure's transaction (privacy/erasure.ts). */
  static async eraseContact(c: Sql, email: string): Promise<number> {
    return (await c.all('DELETE FROM contact_consent WHERE email = $1 RETURNING 1', [email])).length;
  }

  /** One contact's consent to every topic of the org, for the profile pages. */
  async ofContact(org: string, email: string): Promise<ContactConsent[]> {
    const db = this.orgs.org(org);
    await applyEvents(db);
    const rows = await db.all<{ topic: string; status: ConsentStatus; source: ConsentSource; changed_at: Date }>(
      'SELECT topic, status, source, changed_at FROM contact_consent WHERE email = $1',
      [email],
    );
    const changes = new Map(rows.map((r) => [r.topic, r]));
    return (await this.topics(org)).map((t) => {
      const change = changes.get(t.topic);
      return change
        ? { topic: t.topic, status: change.status, source: change.source, changedAt: change.changed_at.toISOString() }
        : { topic: t.topic, status: t.default, source: 'default', changedAt: null };
    });
  }
}

/**
 * Per org database, a visible_at up to which the events are known to carry no consent change past the
 * stored position. Nearly every commit carries none: a read then spares the write transaction (and its
 * WAL sync) on a flow run's path. Kept in memory only: after a restart the stored position is read from.
 */
const consentFreeThrough = new WeakMap<Database, bigint>();

async function applyEvents(db: Database): Promise<void> {
  const since = consentFreeThrough.get(db);
  const [news] = await db.all<{ head: bigint | null; changes: bigint }>(
    `SELECT epoch_us(max(visible_at)) AS head, count(*) FILTER (WHERE email IS NOT NULL AND contains(raw::VARCHAR, '"subscriptions"')) AS changes
       FROM events WHERE visible_at > greatest(coalesce((SELECT max(through) FROM consent_events_applied), '-infinity'::TIMESTAMPTZ), coalesce($1::TIMESTAMPTZ, '-infinity'::TIMESTAMPTZ))`,
    [since === undefined ? null : microsParam(since)],
  );
  if (news?.head === null || news?.head === undefined) return;
  if (news.changes === 0n) {
    consentFreeThrough.set(db, news.head);
    return;
  }
  await db.transaction(async (c) => {
    for (const sql of APPLY_EVENTS) await c.run(sql);
  });
}
