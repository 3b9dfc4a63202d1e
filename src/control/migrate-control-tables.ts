/**
 * A control.duckdb from before the documents held orgs, partner_credentials and audience_tokens as
 * tables: they become documents and the tables are dropped, in one transaction (a crash leaves the
 * tables, and the next start converts them again).
 */
import type { Database, Sql } from '../db/sql.js';
import type { Environment } from '../core/domain.js';
import type { Org } from '../generated/org.js';
import type { OrgDocument, StoredCredential, StoredToken, TokensDocument } from './documents.js';
import { orgKey, tokensKey } from './types.js';

const OLD_TABLES = ['orgs', 'partner_credentials', 'audience_tokens'];

export async function migrateControlTables(db: Database): Promise<void> {
  const present = await db.all<{ name: string }>(
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'main' AND table_name IN ('orgs', 'partner_credentials', 'audience_tokens')",
  );
  if (present.length === 0) return;
  const has = new Set(present.map((t) => t.name));
  await db.transaction(async (c) => {
    const documents: Array<[string, unknown]> = [];
    const orgs = has.has('orgs') ? await c.all<OrgRow>('SELECT * FROM orgs ORDER BY slug') : [];
    const credentials = has.has('partner_credentials') ? await c.all<CredentialRow>('SELECT * FROM partner_credentials') : [];
    const tokens = has.has('audience_tokens') ? await c.all<TokenRow>('SELECT * FROM audience_tokens ORDER BY created_at, id') : [];
    for (const row of orgs) {
      const own = credentials.filter((cred) => cred.org === row.slug);
      const document: OrgDocument = {
        org: toOrg(row),
        credentials: Object.fromEntries(own.map((cred) => [cred.environment, toCredential(cred)])) as Record<Environment, StoredCredential>,
      };
      documents.push([orgKey(row.slug), document]);
      const tokenDocument: TokensDocument = { tokens: tokens.filter((tok) => tok.org === row.slug).map(toToken) };
      if (tokenDocument.tokens.length > 0) documents.push([tokensKey(row.slug), tokenDocument]);
    }
    await insertDocuments(c, documents);
    for (const table of OLD_TABLES.filter((t) => has.has(t))) await c.run(`DROP TABLE ${table}`);
  });
}

async function insertDocuments(c: Sql, documents: Array<[string, unknown]>): Promise<void> {
  const [head] = await c.all<{ revision: bigint | null }>('SELECT max(revision) AS revision FROM control_documents');
  let revision = Number(head?.revision ?? 0n);
  for (const [key, value] of documents) {
    await c.run('INSERT OR REPLACE INTO control_documents VALUES ($1, $2, $3)', [key, JSON.stringify(value), BigInt(++revision)]);
  }
}

interface OrgRow {
  slug: string;
  name: string;
  audience_api: boolean;
  rate_limit: number;
  currency_symbol: string;
  content_fields: string;
  not_found_status: number;
  created_at: Date;
  updated_at: Date;
}

interface CredentialRow {
  partner_id: string;
  org: string;
  environment: Environment;
  secret_hash: string;
  created_at: Date;
  rotated_at: Date | null;
}

interface TokenRow {
  id: string;
  org: string;
  token_hash: string;
  last3: string;
  created_by: string;
  label: string | null;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

const ms = (d: Date | null): number | null => (d === null ? null : d.getTime());

function toOrg(row: OrgRow): Org {
  return {
    slug: row.slug,
    name: row.name,
    audienceApi: row.audience_api,
    rateLimit: row.rate_limit,
    currencySymbol: row.currency_symbol,
    contentFields: JSON.parse(row.content_fields) as string[],
    notFoundStatus: row.not_found_status as Org['notFoundStatus'],
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function toCredential(row: CredentialRow): StoredCredential {
  return { partnerId: row.partner_id, secretHash: row.secret_hash, createdAt: row.created_at.getTime(), rotatedAt: ms(row.rotated_at) };
}

function toToken(row: TokenRow): StoredToken {
  return {
    id: row.id,
    org: row.org,
    hash: row.token_hash,
    last3: row.last3,
    createdBy: row.created_by,
    label: row.label,
    createdAt: row.created_at.getTime(),
    expiresAt: ms(row.expires_at),
    revokedAt: ms(row.revoked_at),
    lastUsedAt: ms(row.last_used_at),
  };
}
