/**
 * Audience API tokens (SPEC 3): one control document per org holding all its tokens (control/documents.ts),
 * so the pool of 10 active tokens holds when two processes create at once (compare-and-set on the
 * document). Every process keeps the tokens in memory from the control plane's watch, so a token created
 * or revoked on one `api` process is in force on the others as soon as they see the change.
 * Authentication never waits on the control plane: `lastUsedAt` is kept in memory and flushed by a timer.
 */
import { changeDocument } from './change-document.js';
import type { TokensDocument } from './documents.js';
import { type ControlDocuments, type ControlEntry, tokensKey } from './types.js';
import type { Context } from '../core/context.js';
import { normalizeEmail } from '../core/domain.js';
import { AppError } from '../core/errors.js';
import type { Token, TokenCreate, TokenIssued } from '../generated/token.js';
import { randomBase62, sha256Hex } from '../core/secrets.js';
import { hasValidChecksum, issueToken } from './token-format.js';
import { type TokenRecord, isActive, toView } from './token-record.js';

/** SPEC 3: up to 10 active tokens per org, so tokens can be rotated with overlap. */
export const TOKEN_POOL_SIZE = 10;

export type AuthFailureReason = 'missing' | 'malformed' | 'unknown' | 'revoked' | 'expired';
export type AuthResult = { ok: true; org: string; tokenId: string } | { ok: false; reason: AuthFailureReason };

export interface TokenStoreOptions {
  /** How often `lastUsedAt` values kept in memory are written to the control plane. Default: 30000 (ms) */
  flushIntervalMs?: number;
  /** Called when a timed flush fails (the values stay pending for the next one). Default: ignore */
  onFlushError?: (error: unknown) => void;
}

export class TokenStore {
  private readonly byHash = new Map<string, TokenRecord>();
  private readonly byId = new Map<string, TokenRecord>();
  /** Revision of each org's tokens document taken in. */
  private readonly revisions = new Map<string, number>();
  /** Ids whose in-memory `lastUsedAt` is newer than the control plane's. */
  private readonly unflushed = new Set<string>();
  private flushTail: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly control: ControlDocuments,
    private readonly ctx: Context,
    private readonly options: TokenStoreOptions = {},
  ) {}

  /** Starts the `lastUsedAt` flush timer. Call once at start. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.flush().catch((error: unknown) => this.options.onFlushError?.(error));
    }, this.options.flushIntervalMs ?? 30_000);
    // The timer must never keep the process alive; close() does the final flush.
    this.timer.unref();
  }

  /**
   * Takes in an org's tokens document from the control plane's watch or from a write of this process; a
   * revision already seen is ignored. A use seen here and not yet flushed keeps its newer `lastUsedAt`.
   */
  apply(entry: ControlEntry): void {
    const org = entry.key.slice(tokensKey('').length);
    if ((this.revisions.get(org) ?? 0) >= entry.revision) return;
    this.revisions.set(org, entry.revision);
    const kept = new Set((entry.value as TokensDocument).tokens.map((r) => r.id));
    // Tokens no longer in the document (the org was deleted) are forgotten.
    for (const record of this.recordsOf(org)) {
      if (kept.has(record.id)) continue;
      this.byId.delete(record.id);
      this.byHash.delete(record.hash);
    }
    for (const stored of (entry.value as TokensDocument).tokens) {
      const local = this.byId.get(stored.id)?.lastUsedAt ?? null;
      this.remember({ ...stored, lastUsedAt: latest(stored.lastUsedAt, local) });
    }
  }

  async create(org: string, input: TokenCreate): Promise<TokenIssued> {
    const now = this.ctx.clock.now();
    const expiresAt = input.expiresAt === undefined ? null : Date.parse(input.expiresAt);
    if (expiresAt !== null && !(expiresAt > now)) {
      throw new AppError('invalid_request', 'expiresAt must be in the future', {
        members: { errors: [{ path: '/expiresAt', message: 'must be in the future' }] },
      });
    }
    const token = issueToken(this.ctx);
    const record: TokenRecord = {
      id: 'tok_' + randomBase62(this.ctx, 16),
      org,
      hash: sha256Hex(token),
      last3: token.slice(-3),
      createdBy: normalizeEmail(input.createdBy),
      label: input.label ?? null,
      createdAt: now,
      expiresAt,
      revokedAt: null,
      lastUsedAt: null,
    };
    await this.change(org, (tokens) => {
      const active = tokens.filter((r) => isActive(r, now)).length;
      if (active >= TOKEN_POOL_SIZE) {
        throw new AppError('token_pool_full', `org "${org}" has ${active} active tokens (at most ${TOKEN_POOL_SIZE}); revoke one first`);
      }
      return [...tokens, record];
    });
    const view = toView(record);
    return { id: view.id, token, last3: view.last3, createdBy: view.createdBy, createdAt: view.createdAt, expiresAt: view.expiresAt };
  }

  /** The org was deleted: its tokens document is emptied (hashes included), on every process once watched. */
  async removeAll(org: string): Promise<void> {
    if (this.revisions.has(org)) await this.change(org, () => []);
  }

  /** Every token of the org, oldest first, revoked and expired ones included (with their times). */
  list(org: string): Token[] {
    return this.recordsOf(org).map(toView);
  }

  /**
   * Revokes one token by id. 404 when the org has no such token. Revoking an already revoked token
   * changes nothing and returns an empty list (DELETE is idempotent). An expired token can be revoked.
   */
  async revokeById(org: string, id: string): Promise<Token[]> {
    return this.revokeMatching(org, (r) => r.id === id, (found) => {
      if (found.length === 0) throw new AppError('token_not_found', `org "${org}" has no token ${id}`);
      return found.filter((r) => r.revokedAt === null);
    });
  }

  /** Revokes the one active token ending in `last3`; 409 when several match, 404 when none does. */
  async revokeByLast3(org: string, last3: string): Promise<Token[]> {
    const now = this.ctx.clock.now();
    return this.revokeMatching(org, (r) => r.last3 === last3 && isActive(r, now), (found) => {
      if (found.length === 0) throw new AppError('token_not_found', `org "${org}" has no active token ending in ${last3}`);
      if (found.length > 1) {
        throw new AppError('token_ambiguous', `${found.length} active tokens end in ${last3}; revoke by id`, {
          members: { ids: found.map((r) => r.id) },
        });
      }
      return found;
    });
  }

  /** Revokes every active token of that creator (e.g. someone leaving); none is not an error. */
  async revokeByCreator(org: string, email: string): Promise<Token[]> {
    const now = this.ctx.clock.now();
    const createdBy = normalizeEmail(email);
    return this.revokeMatching(org, (r) => r.createdBy === createdBy && isActive(r, now), (found) => found);
  }
  /**
   * Checks a presented token. The checksum is verified before any lookup, so typos and made-up tokens
   * cost no hash and no map access. With `memo` (one per keep-alive connection), a token the same
   * connection presented last is not hashed again (the SHA-256 is ~1.4 µs of a lookup's ~30); its
   * record is still read each time, so a revocation holds at once.
   */
  authenticate(token: string | undefined, now: number, memo?: TokenMemo): AuthResult {
    if (token === undefined || token === '') return { ok: false, reason: 'missing' };
    let hash: string;
    if (memo !== undefined && sameToken(memo.token, token)) hash = memo.hash;
    else {
      if (!hasValidChecksum(token)) return { ok: false, reason: 'malformed' };
      hash = sha256Hex(token);
    }
    // A Map lookup keyed by the hash needs no constant-time scan. Its timing depends on the hash a caller
    // presents, never on the token bytes, and the stored hashes are SHA-256 of 30 random base62
    // characters (~178 bits): even a stored hash learnt in full through timing could not be turned back
    // into a token (that needs a preimage). Looking up the plaintext token would leak the token itself.
    const record = this.byHash.get(hash);
    if (!record) return { ok: false, reason: 'unknown' };
    if (memo !== undefined) {
      memo.token = token;
      memo.hash = hash;
    }
    if (record.revokedAt !== null) return { ok: false, reason: 'revoked' };
    if (!isActive(record, now)) return { ok: false, reason: 'expired' };
    if (record.lastUsedAt === null || now > record.lastUsedAt) {
      record.lastUsedAt = now;
      this.unflushed.add(record.id);
    }
    return { ok: true, org: record.org, tokenId: record.id };
  }

  /** Writes pending `lastUsedAt` values to the control plane. Flushes never overlap. */
  flush(): Promise<void> {
    const run = this.flushTail.then(() => this.writeLastUsed());
    this.flushTail = run.catch(() => undefined);
    return run;
  }

  /** Stops the timer and does the final flush. Call before the control plane closes. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Writes each org's pending `lastUsedAt` values into its tokens document, keeping the latest of any process's. */
  private async writeLastUsed(): Promise<void> {
    if (this.unflushed.size === 0) return;
    const ids = [...this.unflushed];
    this.unflushed.clear();
    const used = new Map<string, number>();
    for (const id of ids) {
      const record = this.byId.get(id);
      if (record?.lastUsedAt != null) used.set(id, record.lastUsedAt);
    }
    const orgs = new Set(ids.map((id) => this.byId.get(id)?.org).filter((org) => org !== undefined));
    try {
      for (const org of orgs) {
        await this.change(org, (tokens) => tokens.map((r) => (used.has(r.id) ? { ...r, lastUsedAt: latest(r.lastUsedAt, used.get(r.id)!) } : r)));
      }
    } catch (error) {
      for (const id of ids) this.unflushed.add(id);
      throw error;
    }
  }

  /** In one compare-and-set of the org's document: `pick` chooses among the matching tokens (or throws), those are revoked. */
  private async revokeMatching(
    org: string,
    matches: (record: TokenRecord) => boolean,
    pick: (found: TokenRecord[]) => TokenRecord[],
  ): Promise<Token[]> {
    const now = this.ctx.clock.now();
    let revoked = new Set<string>();
    await this.change(org, (tokens) => {
      revoked = new Set(pick(tokens.filter(matches)).map((r) => r.id));
      return tokens.map((r) => (revoked.has(r.id) ? { ...r, revokedAt: now } : r));
    });
    return this.recordsOf(org).filter((r) => revoked.has(r.id)).map(toView);
  }

  /** Changes the org's tokens document (compare-and-set, retried) and takes the result in at once. */
  private async change(org: string, next: (tokens: TokenRecord[]) => TokenRecord[]): Promise<void> {
    const entry = await changeDocument<TokensDocument>(this.control, tokensKey(org), (current) => ({ tokens: next(current?.tokens ?? []) }));
    this.apply(entry);
  }

  private recordsOf(org: string): TokenRecord[] {
    return [...this.byId.values()].filter((r) => r.org === org).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  private remember(record: TokenRecord): void {
    const old = this.byId.get(record.id);
    if (old) this.byHash.delete(old.hash);
    this.byHash.set(record.hash, record);
    this.byId.set(record.id, record);
  }
}

function latest(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.max(a, b);
}

/** The last token that authenticated on one connection, and its SHA-256 (hex). */
export interface TokenMemo {
  token: string;
  hash: string;
}

/**
 * Whether two tokens are equal, in time that depends on their length only (tokens have one length): a
 * connection shared by a proxy's clients must not tell one of them how much of another's token it guessed.
 */
function sameToken(known: string, presented: string): boolean {
  if (known.length !== presented.length) return false;
  let difference = 0;
  for (let i = 0; i < known.length; i++) difference |= known.charCodeAt(i) ^ presented.charCodeAt(i);
  return difference === 0;
}
