/**
 * What the erasure tests share: generated addresses and org slugs at the longest lengths the service
 * accepts, an erasure asked and waited for, and every place an address could be found again — each text
 * of each table of the org's database (the list read from information_schema, so a new table is covered
 * without touching this file), the outbox folder, and the profiles the Audience API serves.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { normalizeEmail } from '../../src/core/domain.js';
import { ADMIN_KEY, type TestApp, waitFor } from '../helpers/app.js';

const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const ALNUM = `${LOWER}${LOWER.toUpperCase()}0123456789`;
const text = (chars: string, minLength: number, maxLength: number) => fc.string({ unit: fc.constantFrom(...chars), minLength, maxLength });

/** A local part of up to 64 characters: dotted atoms (letters of both cases, digits, _ and -) and a plus-tag. */
const localPart = fc
  .tuple(fc.array(text(`${ALNUM}_-`, 1, 12), { minLength: 1, maxLength: 4 }), fc.option(text(ALNUM, 1, 12), { nil: undefined }))
  .map(([atoms, tag]) => `${atoms.join('.')}${tag === undefined ? '' : `+${tag}`}`);

/** A DNS label of 1 to 63 characters, no hyphen at either end. */
const label = fc.oneof(text(ALNUM, 1, 1), fc.tuple(text(ALNUM, 1, 1), text(`${ALNUM}-`, 0, 61), text(ALNUM, 1, 1)).map((parts) => parts.join('')));

/** A domain of exactly `length` characters (≥ 3) from `pool`: labels of up to 63, as many as it takes. */
function domainOf(pool: string, length: number): string {
  const labels: string[] = [];
  let left = length;
  let at = 0;
  while (left > 63) {
    const size = Math.min(63, left - 2);
    labels.push(pool.slice(at, at + size));
    at += size;
    left -= size + 1;
  }
  labels.push(pool.slice(at, at + left));
  return labels.join('.');
}

/**
 * E-mail addresses as people type them (mixed case, dots, digits, plus-tags), up to 254 characters (the
 * longest an SMTP path holds); a quarter exactly 254. The service stores them lower-cased.
 */
export const addressArb = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(localPart, fc.array(label, { minLength: 1, maxLength: 3 }), text(`${LOWER}ABC`, 2, 10)).map(([local, labels, tld]) => `${local}@${[...labels, tld].join('.')}`).filter((a) => a.length <= 254) },
  { weight: 1, arbitrary: fc.tuple(localPart, text(ALNUM, 254, 254)).map(([local, pool]) => `${local}@${domainOf(pool, 254 - local.length - 1)}`) },
);

/** The generated part of an org slug; `freshOrg` makes it one of the longest kind, never used before. */
export const orgSlugArb = text(`${LOWER}0123456789_`, 35, 35);

let orgs = 0;
/**
 * A 40-character slug (`^[a-z][a-z0-9_]{1,39}$`, the longest) from the generated part and a count: each
 * case creates its org, and a case run again while shrinking needs a slug not taken by the first run.
 */
export function freshOrg(generated: string, length = 40): string {
  const count = String(orgs++).padStart(4, '0');
  return `o${generated}`.slice(0, length - count.length) + count;
}

export type Receipt = { id: string; status: string; emailHash: string; suppress: boolean; removed: Record<string, number> };

/** Asks for the erasure (202) and resolves with the receipt once done. */
export async function requestErasure(h: TestApp, org: string, identity: string, suppress: boolean): Promise<{ id: string; done: Promise<Receipt> }> {
  const res = await h.admin('POST', `/admin/v1/orgs/${org}/contacts/erase`, { identity, suppress });
  if (res.statusCode !== 202) throw new Error(`erase: ${res.statusCode} ${res.body}`);
  const { id } = res.json() as { id: string };
  const done = waitFor(async () => {
    const receipt = (await h.admin('GET', `/admin/v1/orgs/${org}/erasures/${id}`)).json() as Receipt;
    return receipt.status === 'done' ? receipt : undefined;
  }, 60_000);
  return { id, done };
}

/**
 * Every place `address` (normalised: what the service stores) is found in the org: `<table>.<column>`
 * with a count, a file of DATA_DIR/outbox, the serving index, the Audience API. Empty when none.
 */
export async function copiesOf(h: TestApp, org: string, address: string, audienceToken: string): Promise<string[]> {
  const needle = normalizeEmail(address);
  const db = h.db(org);
  const columns = await db.all<{ table_name: string; column_name: string }>(
    `SELECT c.table_name, c.column_name FROM information_schema.columns c
       JOIN information_schema.tables t USING (table_catalog, table_schema, table_name)
      WHERE t.table_type = 'BASE TABLE' AND c.table_catalog = current_database() AND c.table_schema = 'main'
      ORDER BY c.table_name, c.ordinal_position`,
  );
  if (columns.length < 100) throw new Error(`information_schema listed only ${columns.length} columns: the scan would prove nothing`);
  const found: string[] = [];
  const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
  for (const table of new Set(columns.map((c) => c.table_name))) {
    const names = columns.filter((c) => c.table_name === table).map((c) => c.column_name);
    const counts = names.map((name, i) => `count(*) FILTER (WHERE contains(lower(CAST(${quote(name)} AS VARCHAR)), $1)) AS c${i}`);
    const [row] = await db.all<Record<string, bigint>>(`SELECT ${counts.join(', ')} FROM ${quote(table)}`, [needle]);
    names.forEach((name, i) => {
      const n = Number(row![`c${i}`]);
      if (n > 0) found.push(`${table}.${name} (${n})`);
    });
  }
  const outbox = join(h.dataDir, 'outbox');
  for (const file of safeList(outbox)) if (readFileSync(join(outbox, file), 'utf8').toLowerCase().includes(needle)) found.push(`DATA_DIR/outbox/${file}`);
  if (h.app.profiles.find(org, 'email', needle)) found.push('the profile index');
  const lookup = await h.app.inject({ url: `/audience/v2/contacts?identity=${encodeURIComponent(`email:${address}`)}`, headers: { authorization: `Bearer ${audienceToken}` } });
  if (lookup.statusCode !== 404) found.push(`the Audience API (${lookup.statusCode})`);
  return found;
}

/** A device id for the address (a clientId holds at most 45 characters, an address up to 254). */
export function clientIdOf(address: string): string {
  return `c-${createHash('sha256').update(address).digest('hex').slice(0, 40)}`;
}

/** An org with the Audience API on, and a token for it. */
export async function orgWithToken(h: TestApp, org: string, extra: object = {}): Promise<{ cred: { partnerId: string; partnerSecret: string; writeKey: string }; token: string }> {
  const cred = (await h.createOrg(org, { audienceApi: true, ...extra })).production;
  const res = await h.admin('POST', `/admin/v1/orgs/${org}/tokens`, { createdBy: 'ops@example.com' });
  if (res.statusCode !== 201 && res.statusCode !== 200) throw new Error(`token: ${res.statusCode} ${res.body}`);
  return { cred, token: res.json().token as string };
}

/** A CSV or NDJSON import through the admin API. */
export function importContacts(h: TestApp, org: string, format: 'csv' | 'ndjson', rows: Array<{ email: string; first_name: string }>) {
  const payload = format === 'csv' ? `email_address,first_name\n${rows.map((r) => `${r.email},${r.first_name}`).join('\n')}\n` : rows.map((r) => JSON.stringify({ email_address: r.email, first_name: r.first_name })).join('\n');
  return h.app.inject({
    method: 'POST',
    url: `/admin/v1/orgs/${org}/contacts/import`,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': format === 'csv' ? 'text/csv' : 'application/x-ndjson' },
    payload,
  });
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
