/**
 * Audience API tokens (SPEC 3): the store against the real app's DuckDB, and the admin routes on a small
 * Fastify instance with the app's validator and problem handler (app.ts does not register them yet).
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import { changeDocument } from '../../src/control/change-document.js';
import type { TokensDocument } from '../../src/control/documents.js';
import { type ControlDocuments, tokensKey } from '../../src/control/types.js';
import { type Context, ManualClock, createContext } from '../../src/core/context.js';
import { registerProblemHandlers } from '../../src/http/problem.js';
import { sha256Hex } from '../../src/core/secrets.js';
import { compileRouteSchema } from '../../src/core/schemas.js';
import { issueToken } from '../../src/control/token-format.js';
import { registerTokenRoutes } from '../../src/routes/admin/orgs/tokens.js';
import { TOKEN_POOL_SIZE, TokenStore, type TokenStoreOptions } from '../../src/control/token-store.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { scaled } from '../helpers/deadline.js';
import { API_ONLY, startRoleApp } from '../helpers/role-app.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const HOUR = 3_600_000;

interface Tap {
  testdir(): string;
  teardown(fn: () => unknown): void;
}

/** Randomness that first replays scripted base62 strings (as randomBase62 consumes bytes), then is random. */
function scriptedRandom(strings: string[]): (size: number) => Buffer {
  const queue = [...strings];
  return (size) => {
    const next = queue.shift();
    if (next === undefined) return randomBytes(size);
    const bytes = Buffer.alloc(size);
    [...next].forEach((ch, i) => (bytes[i] = BASE62.indexOf(ch)));
    return bytes;
  };
}

/** A second token store on the app's control plane, fed by its own watch like another process's. */
async function watchedStore(control: ControlDocuments, ctx: Context, options?: TokenStoreOptions): Promise<TokenStore> {
  const tokens = new TokenStore(control, ctx, options);
  await control.watch((entry) => {
    if (entry.key.startsWith(tokensKey(''))) tokens.apply(entry);
  });
  tokens.start();
  return tokens;
}

/** Until `condition` holds or 2 s (scaled) pass; the assertion after it says which. */
async function waitFor(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + scaled(2_000);
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

async function setup(t: Tap, options: { script?: string[]; store?: TokenStoreOptions } = {}) {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const h = await startRoleApp(t, API_ONLY, { clock });
  const ctx = createContext({ clock, randomBytes: scriptedRandom(options.script ?? []) });
  const control = h.app.control;
  const tokens = await watchedStore(control, ctx, options.store);
  t.teardown(() => tokens.close());

  const admin = Fastify();
  admin.setValidatorCompiler(({ schema }) => compileRouteSchema(schema));
  // As the app: response schemas document the answers, JSON.stringify writes them.
  admin.setSerializerCompiler(() => (data) => JSON.stringify(data));
  registerProblemHandlers(admin);
  registerTokenRoutes(admin, { tokens, orgs: h.app.orgs });
  await admin.ready();
  t.teardown(() => admin.close());

  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
    admin.inject({
      method,
      url,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const create = async (body: object = { createdBy: 'ops@acme.com' }, slug = 'acme') => {
    const res = await call('POST', `/admin/v1/orgs/${slug}/tokens`, body);
    if (res.statusCode !== 201) throw new Error(`create token: ${res.statusCode} ${res.body}`);
    return res.json() as { id: string; token: string; last3: string; createdBy: string; createdAt: string; expiresAt: string | null };
  };
  /** The org's tokens as the control plane stores them. */
  const dump = async (slug = 'acme') => ((await control.get(tokensKey(slug)))?.value as TokensDocument | undefined)?.tokens ?? [];

  await h.createOrg('acme');
  return { h, clock, ctx, control, tokens, call, create, dump };
}

t.test('create shows the token once; only its SHA-256 is stored', async (t) => {
  const { clock, call, create, dump } = await setup(t);
  const res = await call('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'Ops@Acme.com', label: 'crm sync' });
  t.equal(res.statusCode, 201);
  const issued = res.json();
  t.same(Object.keys(issued).sort(), ['createdAt', 'createdBy', 'expiresAt', 'id', 'last3', 'token']);
  t.match(issued, {
    id: /^tok_[0-9A-Za-z]{16}$/,
    token: /^aud_[0-9A-Za-z]{36}$/,
    createdBy: 'ops@acme.com',
    createdAt: new Date(clock.now()).toISOString(),
    expiresAt: null,
  });
  t.equal(issued.last3, issued.token.slice(-3), 'last3 = the last 3 characters of the token');

  const rows = await dump();
  t.equal(rows.length, 1);
  t.notOk(JSON.stringify(rows).includes(issued.token), 'plaintext token not stored');
  t.notOk(JSON.stringify(rows).includes(issued.token.slice(4, 34)), 'nor its random part');
  t.equal(rows[0]!.hash, sha256Hex(issued.token));
  t.match(rows[0]!.hash, /^[0-9a-f]{64}$/);

  clock.advance(1000);
  const expiring = await create({ createdBy: 'dev@acme.com', expiresAt: '2026-02-01T00:00:00+01:00' });
  t.equal(expiring.expiresAt, '2026-01-31T23:00:00.000Z');

  const list = await call('GET', '/admin/v1/orgs/acme/tokens');
  t.equal(list.statusCode, 200);
  const listed = list.json().tokens;
  t.same(listed[0], {
    id: issued.id,
    last3: issued.last3,
    createdBy: 'ops@acme.com',
    label: 'crm sync',
    createdAt: issued.createdAt,
    lastUsedAt: null,
    expiresAt: null,
    revokedAt: null,
  });
  t.equal(listed[1].id, expiring.id);
  t.notOk(list.body.includes(issued.token) || list.body.includes(expiring.token), 'list never shows a token');
  t.notOk(list.body.includes(sha256Hex(issued.token)), 'nor a hash');
});

t.test('create is validated; an unknown org is 404 on every route', async (t) => {
  const { call, clock } = await setup(t);
  const bad = [
    {},
    { createdBy: 'not-an-email' },
    { createdBy: 'ops@acme.com', token: 'aud_x' },
    { createdBy: 'ops@acme.com', label: '' },
    { createdBy: 'ops@acme.com', expiresAt: '2026-02-01' },
    { createdBy: 'ops@acme.com', expiresAt: new Date(clock.now()).toISOString() },
  ];
  for (const body of bad) {
    const res = await call('POST', '/admin/v1/orgs/acme/tokens', body);
    t.equal(res.statusCode, 400, JSON.stringify(body));
    t.equal(res.json().code, 'invalid_request');
  }
  const routes: Array<['GET' | 'POST' | 'DELETE', string, unknown?]> = [
    ['POST', '/admin/v1/orgs/nobody/tokens', { createdBy: 'ops@acme.com' }],
    ['GET', '/admin/v1/orgs/nobody/tokens'],
    ['DELETE', '/admin/v1/orgs/nobody/tokens/tok_0000000000000000'],
    ['POST', '/admin/v1/orgs/nobody/tokens/revoke', { last3: 'x9Q' }],
  ];
  for (const [method, url, body] of routes) {
    const res = await call(method, url, body);
    t.equal(res.statusCode, 404, `${method} ${url}`);
    t.equal(res.json().code, 'org_not_found');
  }
});

t.test(`a pool of ${TOKEN_POOL_SIZE} active tokens per org`, async (t) => {
  const { call, create, clock, h } = await setup(t);
  const first = await create();
  for (let i = 1; i < TOKEN_POOL_SIZE; i++) await create();
  const full = await call('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@acme.com' });
  t.equal(full.statusCode, 409);
  t.equal(full.json().code, 'token_pool_full');
  t.match(full.headers['content-type'], /application\/problem\+json/);

  await h.createOrg('globex');
  await create({ createdBy: 'ops@globex.com' }, 'globex');
  t.pass('other orgs have their own pool');

  t.equal((await call('DELETE', `/admin/v1/orgs/acme/tokens/${first.id}`)).statusCode, 200);
  const replacement = await create();
  t.ok(replacement.token, 'after a revoke, create works again');
  t.equal((await call('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@acme.com' })).statusCode, 409);

  // Expired tokens leave the pool.
  const { tokens } = (await call('GET', '/admin/v1/orgs/acme/tokens')).json();
  t.equal(tokens.length, TOKEN_POOL_SIZE + 1, 'revoked tokens stay listed');
  await call('DELETE', `/admin/v1/orgs/acme/tokens/${replacement.id}`);
  await create({ createdBy: 'ops@acme.com', expiresAt: new Date(clock.now() + HOUR).toISOString() });
  t.equal((await call('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@acme.com' })).statusCode, 409);
  clock.advance(HOUR);
  t.equal((await call('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@acme.com' })).statusCode, 201, 'expired one no longer counts');
});

t.test('revoke by id', async (t) => {
  const { call, create, tokens, clock, h } = await setup(t);
  const a = await create();
  const b = await create();
  clock.advance(1000);
  const res = await call('DELETE', `/admin/v1/orgs/acme/tokens/${a.id}`);
  t.equal(res.statusCode, 200);
  t.match(res.json(), { revoked: [{ id: a.id, last3: a.last3, createdBy: 'ops@acme.com', revokedAt: new Date(clock.now()).toISOString() }] });
  t.notOk(res.body.includes(a.token));
  t.same(tokens.authenticate(a.token, clock.now()), { ok: false, reason: 'revoked' });
  t.match(tokens.authenticate(b.token, clock.now()), { ok: true, org: 'acme', tokenId: b.id }, 'others keep working');

  const again = await call('DELETE', `/admin/v1/orgs/acme/tokens/${a.id}`);
  t.equal(again.statusCode, 200);
  t.same(again.json(), { revoked: [] }, 'idempotent: nothing newly revoked');

  const unknown = await call('DELETE', '/admin/v1/orgs/acme/tokens/tok_nope');
  t.equal(unknown.statusCode, 404);
  t.equal(unknown.json().code, 'token_not_found');

  await h.createOrg('globex');
  const other = await call('DELETE', `/admin/v1/orgs/globex/tokens/${b.id}`);
  t.equal(other.statusCode, 404, "another org's token is not found");
  t.equal(other.json().code, 'token_not_found');
  t.ok(tokens.authenticate(b.token, clock.now()).ok);
});

t.test('revoke by last3: exactly one active match, else 409 or 404', async (t) => {
  // Two random parts whose tokens end in the same 3 characters, found by brute force.
  const seen = new Map<string, string>();
  let pair: [string, string] | undefined;
  while (!pair) {
    const token = issueToken(createContext());
    const random = token.slice(4, 34);
    const other = seen.get(token.slice(-3));
    if (other) pair = [other, random];
    else seen.set(token.slice(-3), random);
  }
  // create() draws the token's random part, then the id's.
  const script = [pair[0], 'firstId000000000', pair[1], 'secondId00000000'];
  const { call, create, tokens, clock } = await setup(t, { script });
  const first = await create({ createdBy: 'a@acme.com' });
  const second = await create({ createdBy: 'b@acme.com' });
  t.equal(first.last3, second.last3, 'same last3');
  t.same([first.id, second.id], ['tok_firstId000000000', 'tok_secondId00000000']);
  t.not(first.token, second.token);

  const ambiguous = await call('POST', '/admin/v1/orgs/acme/tokens/revoke', { last3: first.last3 });
  t.equal(ambiguous.statusCode, 409);
  t.equal(ambiguous.json().code, 'token_ambiguous');
  t.same(ambiguous.json().ids, [first.id, second.id]);
  t.ok(tokens.authenticate(first.token, clock.now()).ok, 'nothing revoked');

  await call('DELETE', `/admin/v1/orgs/acme/tokens/${first.id}`);
  const one = await call('POST', '/admin/v1/orgs/acme/tokens/revoke', { last3: second.last3 });
  t.equal(one.statusCode, 200, 'only active tokens match');
  t.same(
    one.json().revoked.map((r: { id: string }) => r.id),
    [second.id],
  );
  t.equal(tokens.authenticate(second.token, clock.now()).ok, false);

  const none = await call('POST', '/admin/v1/orgs/acme/tokens/revoke', { last3: second.last3 });
  t.equal(none.statusCode, 404);
  t.equal(none.json().code, 'token_not_found');
});

t.test('revoke by creator revokes all of their active tokens', async (t) => {
  const { call, create, tokens, clock } = await setup(t);
  const a1 = await create({ createdBy: 'ada@acme.com' });
  const a2 = await create({ createdBy: 'ada@acme.com' });
  const b = await create({ createdBy: 'bob@acme.com' });
  const res = await call('POST', '/admin/v1/orgs/acme/tokens/revoke', { createdBy: 'ADA@acme.com' });
  t.equal(res.statusCode, 200);
  t.same(res.json().revoked.map((r: { id: string }) => r.id).sort(), [a1.id, a2.id].sort());
  for (const tok of [a1, a2]) t.same(tokens.authenticate(tok.token, clock.now()), { ok: false, reason: 'revoked' });
  t.ok(tokens.authenticate(b.token, clock.now()).ok);
  t.same((await call('POST', '/admin/v1/orgs/acme/tokens/revoke', { createdBy: 'ada@acme.com' })).json(), { revoked: [] });

  for (const body of [{}, { last3: 'x9Q', createdBy: 'ada@acme.com' }, { last3: 'x9' }, { createdBy: 'nope' }, { id: a1.id }]) {
    const bad = await call('POST', '/admin/v1/orgs/acme/tokens/revoke', body);
    t.equal(bad.statusCode, 400, JSON.stringify(body));
    t.equal(bad.json().code, 'invalid_request');
  }
});

t.test('authenticate: missing, malformed, unknown, revoked, expired', async (t) => {
  const { create, tokens, clock, control, ctx } = await setup(t);
  const ok = await create();
  const expiring = await create({ createdBy: 'ops@acme.com', expiresAt: new Date(clock.now() + HOUR).toISOString() });
  const now = clock.now();
  t.same(tokens.authenticate(ok.token, now), { ok: true, org: 'acme', tokenId: ok.id });
  t.same(tokens.authenticate(undefined, now), { ok: false, reason: 'missing' });
  t.same(tokens.authenticate('', now), { ok: false, reason: 'missing' });
  t.same(tokens.authenticate('Bearer', now), { ok: false, reason: 'malformed' });
  t.same(tokens.authenticate(issueToken(ctx), now), { ok: false, reason: 'unknown' });

  // A typo is refused by the checksum before any lookup: even a stored hash of the typo does not match.
  const typo = ok.token.slice(0, 10) + (ok.token[10] === 'a' ? 'b' : 'a') + ok.token.slice(11);
  await changeDocument<TokensDocument>(control, tokensKey('acme'), (current) => ({
    tokens: [
      ...(current?.tokens ?? []),
      { id: 'tok_typo000000000000', org: 'acme', hash: sha256Hex(typo), last3: typo.slice(-3), createdBy: 'ops@acme.com', label: null, createdAt: now, expiresAt: null, revokedAt: null, lastUsedAt: null },
    ],
  }));
  await waitFor(() => tokens.list('acme').some((r) => r.id === 'tok_typo000000000000'));
  t.same(tokens.authenticate(typo, now), { ok: false, reason: 'malformed' });

  t.ok(tokens.authenticate(expiring.token, now + HOUR - 1).ok, 'valid until expiresAt');
  t.same(tokens.authenticate(expiring.token, now + HOUR), { ok: false, reason: 'expired' });
  await tokens.revokeById('acme', expiring.id);
  t.same(tokens.authenticate(expiring.token, now + HOUR), { ok: false, reason: 'revoked' }, 'revoked wins over expired');
});

t.test("a connection's memo: its token is not hashed again, yet revocation, expiry and other tokens hold", async (t) => {
  const { create, tokens, clock, ctx } = await setup(t);
  const first = await create();
  const second = await create({ createdBy: 'ops@acme.com', expiresAt: new Date(clock.now() + HOUR).toISOString() });
  const now = clock.now();
  const memo = { token: '', hash: '' };
  t.same(tokens.authenticate(issueToken(ctx), now, memo), { ok: false, reason: 'unknown' });
  t.same(memo, { token: '', hash: '' }, 'an unknown token is not remembered');
  t.same(tokens.authenticate(first.token, now, memo), { ok: true, org: 'acme', tokenId: first.id });
  t.same(memo, { token: first.token, hash: sha256Hex(first.token) }, 'a known token is remembered with its hash');
  t.same(tokens.authenticate(first.token, now, memo), { ok: true, org: 'acme', tokenId: first.id }, 'remembered: the same answer');
  // A token that differs in its last character only: hashed, not taken for the remembered one.
  const near = first.token.slice(0, -1) + (first.token.endsWith('a') ? 'b' : 'a');
  t.same(tokens.authenticate(near, now, memo), { ok: false, reason: 'malformed' });
  t.same(tokens.authenticate(second.token, now, memo), { ok: true, org: 'acme', tokenId: second.id }, 'another token on the same connection');
  t.same(tokens.authenticate(second.token, now + HOUR, memo), { ok: false, reason: 'expired' }, 'remembered, yet expired');
  await tokens.revokeById('acme', first.id);
  t.same(tokens.authenticate(first.token, now, memo), { ok: false, reason: 'revoked' });
  t.same(tokens.authenticate(first.token, now, memo), { ok: false, reason: 'revoked' }, 'remembered, yet revoked at once');
});

t.test('lastUsedAt is kept in memory and flushed, not written per request; it survives a reload', async (t) => {
  const { create, tokens, clock, control, ctx, call, dump } = await setup(t);
  const tok = await create();
  clock.advance(5000);
  const usedAt = clock.now();
  let accepted = 0;
  for (let i = 0; i < 100; i++) if (tokens.authenticate(tok.token, usedAt).ok) accepted++;
  t.equal(accepted, 100);
  t.equal(tokens.authenticate(tok.token, usedAt - 1000).ok, true, 'an older use does not move it back');

  const stored = async () => (await dump())[0]!.lastUsedAt;
  t.equal(await stored(), null, 'no write per request');
  t.equal((await call('GET', '/admin/v1/orgs/acme/tokens')).json().tokens[0].lastUsedAt, new Date(usedAt).toISOString(), 'listed from memory');

  await tokens.flush();
  t.equal(await stored(), usedAt, 'flushed');

  await tokens.revokeById('acme', tok.id);
  const reloaded = await watchedStore(control, ctx);
  t.teardown(() => reloaded.close());
  t.match(reloaded.list('acme'), [{ id: tok.id, lastUsedAt: new Date(usedAt).toISOString(), revokedAt: new Date(usedAt).toISOString() }]);
  t.same(reloaded.authenticate(tok.token, clock.now()), { ok: false, reason: 'revoked' });
});

t.test('close() and the timer flush lastUsedAt', async (t) => {
  const { create, tokens, clock, control, ctx, dump } = await setup(t);
  const tok = await create();
  const stored = async () => (await dump())[0]!.lastUsedAt;

  tokens.authenticate(tok.token, clock.now());
  await tokens.close();
  t.equal(await stored(), clock.now(), 'close flushes');

  const timed = await watchedStore(control, ctx, { flushIntervalMs: 20 });
  t.teardown(() => timed.close());
  clock.advance(1000);
  t.ok(timed.authenticate(tok.token, clock.now()).ok);
  const deadline = Date.now() + scaled(2000);
  while ((await stored()) !== clock.now() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.equal(await stored(), clock.now(), 'the timer flushes');
});
