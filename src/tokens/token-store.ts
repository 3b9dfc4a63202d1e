/**
 * Audience API tokens (SPEC 3), persisted in DuckDB and mirrored in memory for authentication.
 * Changes (create, revoke) are DuckDB transactions first, so the pool limit holds even when two admin
 * calls race (Database serializes every statement); the mirror is updated after each commit.
 * Authentication never touches DuckDB: `lastUsedAt` is kept in memory and flushed by a timer.
 */
import type { Context } from '../context.js';
import type { DuckDBValue } from '@duckdb/node-api';
import { type Database, tsParam } from '../db/database.js';
import { normalizeEmail } from '../domain.js';
import { AppError } from '../errors.js';
import type { Token, TokenCreate, TokenIssued } from '../generated/token.js';
import { randomBase62, sha256Hex } from '../orgs/secrets.js';
import { hasValidChecksum, issueToken } from './token-format.js';
import { type TokenRecord, type TokenRow, activeSql, fromRow, isActive, toView } from './token-record.js';

/** SPEC 3: up to 10 active tokens per org, so tokens can be rotated with overlap. */
export const TOKEN_POOL_SIZE = 10;

export type AuthFailureReason = 'missing' | 'malformed' | 'unknown' | 'revoked' | 'expired';
export type AuthResult = { ok: true; org: string; tokenId: string } | { ok: false; reason: AuthFailureReason };

export interface TokenStoreOptions {
  /** How often `lastUsedAt` values kept in memory are written to DuckDB. Default: 30000 (ms) */
  flushIntervalMs?: number;
  /** Called when a timed flush fails (the values stay pending for the next one). Default: ignore */
  onFlushError?: (error: unknown) => void;
}

export class TokenStore {
  private readonly byHash = new Map<string, TokenRecord>();
  private readonly byId = new Map<string, TokenRecord>();
  /** Ids whose in-memory `lastUsedAt` is newer than DuckDB's. */
  private readonly unflushed = new Set<string>();
  private flushTail: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database,
    private readonly ctx: Context,
    private readonly options: TokenStoreOptions = {},
  ) {}

  /** Fills the in-memory index from DuckDB and starts the `lastUsedAt` flush timer. Call once at start. */
  async load(): Promise<void> {
    const rows = await this.db.all<TokenRow>('SELECT * FROM audience_tokens');
    this.byHash.clear();
    this.byId.clear();
    for (const row of rows) this.remember(fromRow(row));
    if (!this.timer) {
      this.timer = setInterval(() => {
        this.flush().catch((error: unknown) => this.options.onFlushError?.(error));
      }, this.options.flushIntervalMs ?? 30_000);
      // The timer must never keep the process alive; close() does the final flush.
      this.timer.unref();
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
    await this.db.transaction(async (c) => {
      const [counted] = await c.all<{ n: bigint }>(
        `SELECT count(*) AS n FROM audience_tokens WHERE org = $1 AND ${activeSql('$2')}`,
        [org, tsParam(now)],
      );
      const active = Number(counted?.n ?? 0);
      if (active >= TOKEN_POOL_SIZE) {
        throw new AppError('token_pool_full', `org "${org}" has ${active} active tokens (at most ${TOKEN_POOL_SIZE}); revoke one first`);
      }
      await c.run(
        `INSERT INTO audience_tokens (id, org, token_hash, last3, created_by, label, created_at, expires_at, revoked_at, last_used_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, NULL)`,
        [record.id, org, record.hash, record.last3, record.createdBy, record.label, tsParam(now), expiresAt === null ? null : tsParam(expiresAt)],
      );
    });
    this.remember(record);
    const view = toView(record);
    return { id: view.id, token, last3: view.last3, createdBy: view.createdBy, createdAt: view.createdAt, expiresAt: view.expiresAt };
  }

  /** Every token of the org, oldest first, revoked and expired ones included (with their times). */
  list(org: string): Token[] {
    return [...this.byId.values()]
      .filter((r) => r.org === org)
      .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
      .map(toView);
  }

  /**
   * Revokes one token by id. 404 when the org has no such token. Revoking an already revoked token
   * changes nothing and returns an empty list (DELETE is idempotent). An expired token can be revoked.
   */
  async revokeById(org: string, id: string): Promise<Token[]> {
    return this.revokeMatching(org, 'id = $2', [id], (found) => {
      if (found.length === 0) throw new AppError('token_not_found', `org "${org}" has no token ${id}`);
      return found.filter((r) => r.revokedAt === null);
    });
  }

  /** Revokes the one active token ending in `last3`; 409 when several match, 404 when none does. */
  async revokeByLast3(org: string, last3: string): Promise<Token[]> {
    return this.revokeMatching(org, `last3 = $2 AND ${activeSql('$3')}`, [last3, tsParam(this.ctx.clock.now())], (found) => {
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
    const now = tsParam(this.ctx.clock.now());
    return this.revokeMatching(org, `created_by = $2 AND ${activeSql('$3')}`, [normalizeEmail(email), now], (found) => found);
  }

  /**
   * Checks a presented token. The checksum is verified before any lookup, so typos and made-up tokens
   * cost no hash and no map access.
   */
  authenticate(token: string | undefined, now: number): AuthResult {
    if (token === undefined || token === '') return { ok: false, reason: 'missing' };
    if (!hasValidChecksum(token)) return { ok: false, reason: 'malformed' };
    // A Map lookup keyed by the hash needs no constant-time scan. Its timing depends on the hash a caller
    // presents, never on the token bytes, and the stored hashes are SHA-256 of 30 random base62
    // characters (~178 bits): even a stored hash learnt in full through timing could not be turned back
    // into a token (that needs a preimage). Looking up the plaintext token would leak the token itself.
    const record = this.byHash.get(sha256Hex(token));
    if (!record) return { ok: false, reason: 'unknown' };
    if (record.revokedAt !== null) return { ok: false, reason: 'revoked' };
    if (!isActive(record, now)) return { ok: false, reason: 'expired' };
    if (record.lastUsedAt === null || now > record.lastUsedAt) {
      record.lastUsedAt = now;
      this.unflushed.add(record.id);
    }
    return { ok: true, org: record.org, tokenId: record.id };
  }

  /** Writes pending `lastUsedAt` values to DuckDB (one transaction). Flushes never overlap. */
  flush(): Promise<void> {
    const run = this.flushTail.then(() => this.writeLastUsed());
    this.flushTail = run.catch(() => undefined);
    return run;
  }

  /** Stops the timer and does the final flush. Call before the database closes. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private async writeLastUsed(): Promise<void> {
    if (this.unflushed.size === 0) return;
    const ids = [...this.unflushed];
    this.unflushed.clear();
    try {
      await this.db.transaction(async (c) => {
        for (const id of ids) {
          const usedAt = this.byId.get(id)?.lastUsedAt;
          if (usedAt != null) await c.run('UPDATE audience_tokens SET last_used_at = $2 WHERE id = $1', [id, tsParam(usedAt)]);
        }
      });
    } catch (error) {
      for (const id of ids) this.unflushed.add(id);
      throw error;
    }
  }

  /** In one transaction: the org's tokens matching `where`, `pick` chooses (or throws), those are revoked. */
  private async revokeMatching(
    org: string,
    where: string,
    params: DuckDBValue[],
    pick: (found: TokenRecord[]) => TokenRecord[],
  ): Promise<Token[]> {
    const now = this.ctx.clock.now();
    const revoked = await this.db.transaction(async (c) => {
      const rows = await c.all<TokenRow>(`SELECT * FROM audience_tokens WHERE org = $1 AND ${where} ORDER BY created_at, id`, [org, ...params]);
      const found = rows.map(fromRow);
      const chosen = pick(found);
      for (const r of chosen) {
        await c.run('UPDATE audience_tokens SET revoked_at = $2 WHERE id = $1', [r.id, tsParam(now)]);
      }
      return chosen.map((r) => r.id);
    });
    const views: Token[] = [];
    for (const id of revoked) {
      const record = this.byId.get(id);
      if (!record) continue;
      record.revokedAt = now;
      views.push(toView(record));
    }
    return views;
  }

  private remember(record: TokenRecord): void {
    this.byHash.set(record.hash, record);
    this.byId.set(record.id, record);
  }
}

