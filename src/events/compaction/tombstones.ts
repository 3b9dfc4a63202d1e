/**
 * Erased and suppressed contacts, as compaction sees them (SPEC 8, erasure): every read and write of
 * `erased_contacts`, and the deletion of what compaction wrote for one contact.
 *
 * A tombstone names a contact by the SHA-256 of its normalised e-mail, never the e-mail itself. An event
 * of that contact at or below `through_seq` in the log (the log's head when the erasure was asked) is
 * never written again, whether the log is read again after a crash, a restore or a held org's recovery;
 * a suppressed contact's events are kept out at every position. The compactor holds each org's
 * tombstones in memory (loaded with its state, read again when an erasure asks): an org without any
 * pays one size check per event.
 */
import { listValue } from '@duckdb/node-api';
import { emailHash } from '../../core/domain.js';
import { tsParam } from '../../db/database.js';
import type { Database, Params, Sql } from '../../db/sql.js';
import { eventTypesFoldedThrough, forgetEvents } from './fold-event-types.js';

export interface Tombstone {
  throughSeq: number;
  suppressed: boolean;
}

/** Why an event was kept out: its contact was erased (an event from before), or is suppressed (any event). */
export type KeptOut = 'erased' | 'suppressed';

export class Tombstones {
  constructor(private readonly byHash: ReadonlyMap<string, Tombstone> = new Map()) {}

  get size(): number {
    return this.byHash.size;
  }

  /** Whether an event of `email` at log position `seq` is kept out, and why; undefined when it is written. */
  keptOut(email: string | null, seq: number): KeptOut | undefined {
    if (this.byHash.size === 0 || email === null) return undefined;
    const tombstone = this.byHash.get(emailHash(email));
    if (!tombstone) return undefined;
    if (tombstone.suppressed) return 'suppressed';
    return seq <= tombstone.throughSeq ? 'erased' : undefined;
  }
}

export async function loadTombstones(db: Database): Promise<Tombstones> {
  const rows = await db.all<{ email_hash: string; through_seq: bigint; suppressed: boolean }>('SELECT email_hash, through_seq, suppressed FROM erased_contacts');
  return new Tombstones(new Map(rows.map((r) => [r.email_hash, { throughSeq: Number(r.through_seq), suppressed: r.suppressed }])));
}

/** Records (or widens) a contact's tombstone: the later position wins, and suppression stays once set. */
export async function recordTombstone(c: Sql, hash: string, tombstone: Tombstone, now: number): Promise<void> {
  await c.run(
    `INSERT INTO erased_contacts VALUES ($1, $2, $3, $4)
     ON CONFLICT (email_hash) DO UPDATE SET through_seq = greatest(erased_contacts.through_seq, excluded.through_seq),
       suppressed = erased_contacts.suppressed OR excluded.suppressed, erased_at = excluded.erased_at`,
    [hash, BigInt(tombstone.throughSeq), tombstone.suppressed, tsParam(now)],
  );
}

/** The hashes of suppressed contacts, as a subquery (imports leave them out: contact-store.ts). */
export const SUPPRESSED_HASHES = 'SELECT email_hash FROM erased_contacts WHERE suppressed';

/** The e-mails among `emails` whose contact is suppressed (never messaged). */
export async function suppressedAmong(db: Pick<Database, 'all'> | Pick<Sql, 'all'>, emails: readonly string[]): Promise<Set<string>> {
  if (emails.length === 0) return new Set();
  const byHash = new Map(emails.map((email) => [emailHash(email), email]));
  const rows = await db.all<{ email_hash: string }>(
    `${SUPPRESSED_HASHES} AND email_hash IN (SELECT unnest($1::VARCHAR[]))`,
    [listValue([...byHash.keys()])],
  );
  return new Set(rows.map((r) => byHash.get(r.email_hash)!));
}

/**
 * Deletes what compaction wrote of one contact: its events (and their counts in event_types, for those
 * already folded there), its identities, its per-contact aggregates, and quarantined events that name
 * its address. Returns the rows removed per kind.
 */
export async function eraseCompacted(c: Sql, email: string): Promise<Record<string, number>> {
  const folded = await eventTypesFoldedThrough(c);
  const events = await c.all<{ environment: string; event_name: string; visible_us: bigint }>(
    'DELETE FROM events WHERE email = $1 RETURNING environment, event_name, epoch_us(visible_at) AS visible_us',
    [email],
  );
  await forgetEvents(c, folded === null ? [] : events.filter((e) => e.visible_us <= folded));
  const count = async (sql: string, params: Params) => (await c.all(`${sql} RETURNING 1`, params)).length;
  return {
    events: events.length,
    identities: await count('DELETE FROM identify_mappings WHERE email = $1', [email]),
    activity: (await count('DELETE FROM contact_activity WHERE email = $1', [email])) + (await count('DELETE FROM contact_orders WHERE email = $1', [email])),
    // The address anywhere in a rejected event's body (lower-cased, as e-mails are stored normalised).
    quarantined: await count('DELETE FROM quarantine WHERE contains(lower(raw::VARCHAR), $1)', [email]),
  };
}
