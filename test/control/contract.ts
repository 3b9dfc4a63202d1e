/**
 * The contract both control-plane backends pass (duckdb-documents.test.ts, kv-documents.test.ts), and
 * the stores on top of them as two processes see them: `second` is another client of the same store
 * (another connection to the KV bucket; for the embedded file, whose one process owns it, the same
 * instance). `openFresh` owns closing what it hands out.
 */
import type { Test } from 'tap';
import { changeDocument } from '../../src/control/change-document.js';
import { type ControlDocuments, type ControlEntry, ControlConflictError } from '../../src/control/types.js';
import { createContext } from '../../src/core/context.js';
import { AppError } from '../../src/core/errors.js';
import { OrgStore } from '../../src/control/org-store.js';
import { PartnerRegistry } from '../../src/control/partner-registry.js';
import { TOKEN_POOL_SIZE, TokenStore } from '../../src/control/token-store.js';
import { scaled, until } from '../helpers/deadline.js';

export interface FreshControl {
  first: ControlDocuments;
  second: ControlDocuments;
  /** Closes both and opens the same store again. */
  reopen(): Promise<ControlDocuments>;
}

/**
 * The SLA of the issue: a change made on one process is in force on every process within 1 s (on a quiet
 * machine; the wait is scaled by TEST_TIME_SCALE like every deadline of the suite).
 */
const IN_FORCE_MS = 1000;

export function controlContract(t: Test, name: string, openFresh: (t: Test) => Promise<FreshControl>): void {
  t.test(`${name}: create, get and compare-and-set update`, async (t) => {
    const { first, second } = await openFresh(t);
    t.equal(await first.get('org.acme'), undefined, 'absent');
    const created = await first.create('org.acme', { n: 1 });
    t.ok(created.revision > 0);
    t.same(await second.get('org.acme'), { key: 'org.acme', value: { n: 1 }, revision: created.revision }, 'the other client reads it');
    await t.rejects(second.create('org.acme', { n: 2 }), ControlConflictError, 'create refuses an existing key');
    const updated = await second.update('org.acme', { n: 2 }, created.revision);
    t.ok(updated.revision > created.revision, 'revisions grow');
    await t.rejects(first.update('org.acme', { n: 3 }, created.revision), ControlConflictError, 'a stale revision is refused');
    t.same((await first.get('org.acme'))?.value, { n: 2 }, 'the refused write changed nothing');
    const other = await first.create('tokens.acme', { tokens: [] });
    t.ok(other.revision > updated.revision, 'revisions grow across documents');
    t.same(await second.list(), [updated, other], 'list: every document as stored now, in key order');
  });

  t.test(`${name}: values round-trip as JSON, hostile text included`, async (t) => {
    const { first, second } = await openFresh(t);
    const value = { quote: `'"; DROP TABLE x; --`, unicode: 'Zoë 🚀 \u0000', nested: { __proto__: { polluted: true }, list: [1, null, true] } };
    await first.create('org.hostile', value);
    const read = (await second.get('org.hostile'))!.value as Record<string, unknown>;
    t.same(read, JSON.parse(JSON.stringify(value)));
    t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype was polluted');
  });

  t.test(`${name}: watch delivers every document first, then each change, in revision order`, async (t) => {
    const { first, second } = await openFresh(t);
    await first.create('org.a', { v: 'a' });
    const b = await first.create('org.b', { v: 'b' });
    const seen: ControlEntry[] = [];
    await second.watch((entry) => seen.push(entry));
    t.same(seen.map((e) => e.key).sort(), ['org.a', 'org.b'], 'documents present at the call are in once watch resolves');
    const changed = await first.update('org.b', { v: 'b2' }, b.revision);
    await until(() => seen.some((e) => e.revision === changed.revision), IN_FORCE_MS, 5);
    const last = seen.at(-1)!;
    t.same(last, { key: 'org.b', value: { v: 'b2' }, revision: changed.revision }, 'a change by the other client is seen within 1 s');
    const revisions = seen.map((e) => e.revision);
    t.same(revisions, [...revisions].sort((x, y) => x - y), 'in revision order');
  });

  t.test(`${name}: compare-and-set loops from both clients lose no change`, async (t) => {
    const { first, second } = await openFresh(t);
    const bump = (control: ControlDocuments) => changeDocument<{ n: number }>(control, 'org.counter', (current) => ({ n: (current?.n ?? 0) + 1 }));
    await Promise.all(Array.from({ length: 8 }, (_, i) => bump(i % 2 === 0 ? first : second)));
    t.same((await first.get('org.counter'))?.value, { n: 8 });
  });

  t.test(`${name}: documents survive closing and reopening`, async (t) => {
    const fresh = await openFresh(t);
    await fresh.first.create('org.kept', { kept: true });
    const again = await fresh.reopen();
    t.same((await again.get('org.kept'))?.value, { kept: true });
  });

  t.test(`${name}: org and token changes on one process are in force on the other within 1 s`, async (t) => {
    const { first, second } = await openFresh(t);
    const a = await processOn(first);
    const b = await processOn(second);
    const { credentials } = await a.orgs.create({ slug: 'acme', name: 'Acme' });
    await until(() => b.orgs.cached('acme') !== undefined, IN_FORCE_MS, 5);
    t.same(b.registry.authenticate(credentials.production.partnerId, credentials.production.partnerSecret), { org: 'acme', environment: 'production' });
    await t.rejects(b.orgs.create({ slug: 'acme', name: 'Again' }), { code: 'org_exists' }, 'the slug is taken on every process');

    const rotated = await a.orgs.rotate('acme', 'production');
    await until(() => b.registry.authenticate(rotated.partnerId, rotated.partnerSecret) !== undefined, IN_FORCE_MS, 5);
    t.equal(b.registry.authenticate(credentials.production.partnerId, credentials.production.partnerSecret), undefined, 'the old secret is refused there');

    const patched = await b.orgs.patch('acme', { rateLimit: 7, audienceApi: true });
    await until(() => a.orgs.cached('acme')?.rateLimit === 7, IN_FORCE_MS, 5);
    t.match(a.orgs.cached('acme'), { rateLimit: 7, audienceApi: true, name: 'Acme', updatedAt: patched.updatedAt });

    const issued = await a.tokens.create('acme', { createdBy: 'ops@acme.com' });
    const now = Date.now();
    await until(() => b.tokens.authenticate(issued.token, now).ok, IN_FORCE_MS, 5);
    t.match(b.tokens.authenticate(issued.token, now), { ok: true, org: 'acme', tokenId: issued.id });
    await a.tokens.revokeById('acme', issued.id);
    await until(() => !b.tokens.authenticate(issued.token, now).ok, IN_FORCE_MS, 5);
    t.same(b.tokens.authenticate(issued.token, now), { ok: false, reason: 'revoked' }, 'revoked there within 1 s');
  });

  t.test(`${name}: the pool of ${TOKEN_POOL_SIZE} active tokens holds when both processes create at once`, async (t) => {
    const { first, second } = await openFresh(t);
    const a = await processOn(first);
    const b = await processOn(second);
    await a.orgs.create({ slug: 'acme', name: 'Acme' });
    await until(() => b.orgs.cached('acme') !== undefined, IN_FORCE_MS, 5);
    const attempts = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? a : b).tokens.create('acme', { createdBy: `p${i}@acme.com` })),
    );
    const created = attempts.filter((r) => r.status === 'fulfilled').length;
    const refused = attempts.filter((r) => r.status === 'rejected' && r.reason instanceof AppError && r.reason.code === 'token_pool_full').length;
    t.equal(created, TOKEN_POOL_SIZE, 'exactly the pool size was created');
    t.equal(refused, 16 - TOKEN_POOL_SIZE, 'the rest were refused as pool full');
    await until(() => a.tokens.list('acme').length === TOKEN_POOL_SIZE, IN_FORCE_MS, 5);
    t.equal(a.tokens.list('acme').length, TOKEN_POOL_SIZE);
  });

  t.test(`${name}: lastUsedAt flushed by two processes keeps the latest use`, async (t) => {
    const { first, second } = await openFresh(t);
    const a = await processOn(first);
    const b = await processOn(second);
    await a.orgs.create({ slug: 'acme', name: 'Acme' });
    const issued = await a.tokens.create('acme', { createdBy: 'ops@acme.com' });
    await until(() => b.tokens.list('acme').length === 1, IN_FORCE_MS, 5);
    const base = Date.now();
    b.tokens.authenticate(issued.token, base + 2000);
    a.tokens.authenticate(issued.token, base + 1000);
    await b.tokens.flush();
    await a.tokens.flush();
    const stored = ((await first.get('tokens.acme'))!.value as { tokens: Array<{ lastUsedAt: number }> }).tokens[0]!;
    t.equal(stored.lastUsedAt, base + 2000, 'an older use flushed later does not move it back');
  });
}

/** What one process keeps of the control plane: its org and token stores, fed by its own watch. */
async function processOn(control: ControlDocuments) {
  const ctx = createContext();
  const registry = new PartnerRegistry();
  const orgs = new OrgStore(control, registry, ctx);
  const tokens = new TokenStore(control, ctx);
  await control.watch((entry) => {
    if (entry.key.startsWith('org.')) void orgs.apply(entry);
    else if (entry.key.startsWith('tokens.')) tokens.apply(entry);
  });
  return { orgs, tokens, registry };
}

