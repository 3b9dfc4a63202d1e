/**
 * Erasure of one contact (SPEC 8, erasure and suppression): `POST …/contacts/erase` records a request,
 * answered 202, and the work runs here. Each table's owner deletes its own rows of the contact, in one
 * transaction of the org's database: compaction (events, identities, aggregates, quarantine:
 * tombstones.ts), imported contacts, consent, and the flows' sends and decisions. Then the profile leaves
 * the serving index and the feed.
 *
 * Why nothing comes back: the request writes a tombstone (the contact's e-mail hash and the log's head)
 * in the transaction that records it, and asks compaction to read the org's tombstones again; the
 * deletion waits until compaction has passed that head. Any event of the contact acknowledged before
 * the request is then either in the database (and deleted) or kept out by the tombstone, now and
 * whenever the log is read again. Runs of the org's flows wait while its rows are deleted (a run reads
 * the rows it decides on), and sends of the contact still queued are dropped.
 *
 * Copies kept outside the org's database go after its rows, before the receipt says done (`alsoErase`:
 * the outbox channel's file); a copy that cannot be rewritten leaves the request pending, tried again.
 *
 * A request keeps the e-mail until it is done, so a restart resumes it; the receipt then keeps only the
 * hash, the times and the rows removed per kind.
 */
import type { Context } from '../core/context.js';
import { AppError } from '../core/errors.js';
import { LogUnavailableError } from '../events/log/types.js';
import { tsParam } from '../db/database.js';
import type { OrgStorage } from '../db/org-storage.js';
import type { Compaction } from '../events/compaction/compaction.js';
import { emailHash } from '../core/domain.js';
import { eraseCompacted, recordTombstone } from '../events/compaction/tombstones.js';
import { ContactStore } from '../events/profiles/contact-store.js';
import type { ProfileMaterializer } from '../events/profiles/profile-materializer.js';
import type { Metrics } from '../ops/metrics.js';
import { ConsentStore } from '../reactions/consent/consent-store.js';
import { WaitStore } from '../reactions/flows/store/wait-store.js';
import { SendStore } from '../reactions/flows/store/send-store.js';
import { OccurrenceStore } from '../reactions/flows/store/occurrence-store.js';

export type ErasureStatus = 'pending' | 'done';

export interface ErasureReceipt {
  id: string;
  status: ErasureStatus;
  /** SHA-256 of the normalised e-mail (the Audience API's email-hash). */
  emailHash: string;
  suppress: boolean;
  requestedAt: string;
  doneAt: string | null;
  /** Rows removed per kind, once done. */
  removed: Record<string, number> | null;
}

interface ErasureRow {
  id: string;
  email_hash: string;
  email: string | null;
  suppress: boolean;
  through_seq: bigint;
  status: ErasureStatus;
  requested_at: Date;
  done_at: Date | null;
  removed: string | null;
}

/** A failed erasure (its org's database unavailable, say) is tried again after this long. */
const RETRY_MS = 10_000;

const COLUMNS = 'id, email_hash, email, suppress, through_seq, status, requested_at, done_at, removed';

export interface ErasureDeps {
  orgs: OrgStorage;
  /** The log's head: events acknowledged before a request are at or below it. */
  log: { headSeq(): Promise<number> };
  /** Absent in a process that does not compact: the tombstone is then read by the compactor's own start. */
  compaction: Pick<Compaction, 'reload' | 'whenCompacted'> | undefined;
  materializer: Pick<ProfileMaterializer, 'forget' | 'refresh'>;
  /** Resolves when the profile refreshes queued so far are done (none re-adds the profile after it goes). */
  profilesSettled(): Promise<void>;
  ctx: Context;
  metrics: Pick<Metrics, 'erasures'>;
  logger: { error(details: object, message: string): void; info(details: object, message: string): void };
}

export class Erasures {
  private readonly running = new Map<string, Promise<void>>();
  private guard: <T>(org: string, work: () => Promise<T>) => Promise<T> = (_org, work) => work();
  private readonly erasedListeners: Array<(org: string, email: string) => void> = [];
  private readonly copies: Array<{ kind: string; erase: (org: string, email: string) => Promise<number> }> = [];
  private readonly retries = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly deps: ErasureDeps) {}

  /** The flows role: deletions wait for the org's flow run in progress, and runs for them. */
  serializeWith(guard: <T>(org: string, work: () => Promise<T>) => Promise<T>): void {
    this.guard = guard;
  }

  /** Told each contact erased, after its rows are gone (the flows role drops its queued sends). */
  onErased(listener: (org: string, email: string) => void): void {
    this.erasedListeners.push(listener);
  }

  /**
   * A copy of the contact kept outside the org's database (the outbox file): `erase` runs after the
   * rows are gone and the listeners above were told (so no queued send of the contact is written after
   * it), and answers how many entries went, counted under `kind` in the receipt.
   */
  alsoErase(kind: string, erase: (org: string, email: string) => Promise<number>): void {
    this.copies.push({ kind, erase });
  }

  /** Records the request and its tombstone, and starts the work; the receipt says `pending`. */
  async request(org: string, email: string, suppress: boolean): Promise<ErasureReceipt> {
    const { ctx } = this.deps;
    const id = `era_${ctx.randomBytes(12).toString('hex')}`;
    const now = ctx.clock.now();
    const throughSeq = await this.deps.log.headSeq().catch((error: unknown) => {
      // Without the log's head no tombstone can be written: nothing is recorded, the caller retries.
      if (error instanceof LogUnavailableError) throw new AppError('log_unavailable', `The event log is out of reach (${error.message}); nothing was erased yet: retry.`, { headers: { 'Retry-After': '5' } });
      throw error;
    });
    const hash = emailHash(email);
    await this.deps.orgs.org(org).transaction(async (c) => {
      await recordTombstone(c, hash, { throughSeq, suppressed: suppress }, now);
      await c.run(`INSERT INTO erasures (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, 'pending', $6, NULL, NULL)`, [id, hash, email, suppress, BigInt(throughSeq), tsParam(now)]);
    });
    this.start(org, id);
    return (await this.get(org, id))!;
  }

  async get(org: string, id: string): Promise<ErasureReceipt | undefined> {
    const [row] = await this.deps.orgs.org(org).all<ErasureRow>(`SELECT ${COLUMNS} FROM erasures WHERE id = $1`, [id]);
    return row && toReceipt(row);
  }

  /** The org's newest receipts first, at most `limit`. */
  async list(org: string, limit: number): Promise<ErasureReceipt[]> {
    const rows = await this.deps.orgs.org(org).all<ErasureRow>(`SELECT ${COLUMNS} FROM erasures ORDER BY requested_at DESC, id LIMIT $1`, [limit]);
    return rows.map(toReceipt);
  }

  /** Requests left pending by an earlier process (a crash or a stop mid-way) are run again. */
  async resumePending(org: string): Promise<void> {
    const rows = await this.deps.orgs.org(org).all<{ id: string }>("SELECT id FROM erasures WHERE status = 'pending' ORDER BY requested_at");
    for (const { id } of rows) this.start(org, id);
  }

  /** Resolves when every erasure started so far has ended (done, or failed and left pending). */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running.values());
  }

  /** No erasure starts or is retried from now on; pending ones resume at the next start. */
  close(): void {
    this.closed = true;
    for (const timer of this.retries) clearTimeout(timer);
    this.retries.clear();
  }

  private start(org: string, id: string): void {
    if (this.running.has(id) || this.closed) return;
    const work = this.run(org, id)
      .catch((err: unknown) => {
        if (this.closed) return;
        // It stays pending (its tombstone in force): tried again shortly, and at every start.
        this.deps.logger.error({ err, org, erasure: id }, `erasure failed; tried again in ${RETRY_MS / 1000} s`);
        const timer = setTimeout(() => {
          this.retries.delete(timer);
          this.start(org, id);
        }, RETRY_MS);
        timer.unref();
        this.retries.add(timer);
      })
      .finally(() => this.running.delete(id));
    this.running.set(id, work);
  }

  private async run(org: string, id: string): Promise<void> {
    const db = this.deps.orgs.org(org);
    const [row] = await db.all<ErasureRow>(`SELECT ${COLUMNS} FROM erasures WHERE id = $1 AND status = 'pending'`, [id]);
    if (!row?.email) return;
    const email = row.email;
    const { compaction } = this.deps;
    // Compaction reads the tombstone before its next batch, and passes every event acknowledged before the request.
    await compaction?.reload(org);
    await compaction?.whenCompacted(Number(row.through_seq));
    const before = row.removed ? (JSON.parse(row.removed) as Record<string, number>) : {};
    const removed = await this.guard(org, () =>
      db.transaction(async (c) => {
        const removed: Record<string, number> = {
          ...(await eraseCompacted(c, email)),
          importedContacts: await ContactStore.eraseContact(c, email),
          consent: await ConsentStore.eraseContact(c, email),
          ...(await SendStore.eraseContact(c, email)),
          occurrenceMembers: await OccurrenceStore.eraseContact(c, email),
          flowEntries: await WaitStore.eraseContact(c, email),
        };
        for (const [kind, n] of Object.entries(before)) removed[kind] = (removed[kind] ?? 0) + n;
        await c.run('UPDATE erasures SET removed = $2 WHERE id = $1', [id, JSON.stringify(removed)]);
        return removed;
      }),
    );
    for (const listener of this.erasedListeners) listener(org, email);
    for (const copy of this.copies) removed[copy.kind] = (removed[copy.kind] ?? 0) + (await copy.erase(org, email));
    // Its identities are gone from the database: compaction forgets them too.
    await compaction?.reload(org);
    // Out of the index (and the feed); back only if events after the request made a new profile.
    await this.deps.profilesSettled();
    await this.deps.materializer.forget(org, email);
    await this.deps.materializer.refresh([{ org, email }]);
    await db.run("UPDATE erasures SET status = 'done', email = NULL, done_at = $2, removed = $3 WHERE id = $1", [id, tsParam(this.deps.ctx.clock.now()), JSON.stringify(removed)]);
    this.deps.metrics.erasures.inc({ suppress: String(row.suppress) });
    this.deps.logger.info({ org, erasure: id, suppress: row.suppress }, 'erasure done');
  }
}

function toReceipt(row: ErasureRow): ErasureReceipt {
  return {
    id: row.id,
    status: row.status,
    emailHash: row.email_hash,
    suppress: row.suppress,
    requestedAt: row.requested_at.toISOString(),
    doneAt: row.done_at?.toISOString() ?? null,
    removed: row.status === 'done' && row.removed ? (JSON.parse(row.removed) as Record<string, number>) : null,
  };
}
