/**
 * Erasure is final (issue 37, finding 7): after an erasure with suppress, the contact's old unsubscribe
 * link and the admin consent PUT answer as before and write nothing, also while the erasure runs; the
 * outbox channel's file loses the contact's lines (and messages) without losing a line of anyone else
 * appended meanwhile. Generated addresses up to 254 characters in mixed case and 40-character org slugs,
 * against the real app; after each case no table of the org's database (read from information_schema),
 * no outbox file and no profile holds the address.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { normalizeEmail } from '../../src/core/domain.js';
import { customEvent, startTestApp, type TestApp } from '../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../helpers/flows.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import { addressArb, clientIdOf, copiesOf, freshOrg, orgSlugArb, orgWithToken, requestErasure } from './erasure-probes.js';

const BOB = 'bob@example.com';
const OUTBOX = { channel: 'outbox', template: { to: '{{ contact.email_address }}', link: '{{ unsubscribe_url }}' } };
/** Each case is a new org and a full erasure on a real app: a handful per property keeps the file near a minute. */
const RUNS = 5;

type Line = { sendId: string; email: string; content: { to: string; link: string } };
const outboxLines = (h: TestApp, org: string): Line[] => {
  try {
    return readFileSync(join(h.dataDir, 'outbox', `${org}.jsonl`), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line);
  } catch {
    return [];
  }
};

/** An org with the booking flow on the outbox, `address` and Bob booked and sent one message each. */
async function sentTo(h: TestApp, org: string, address: string, flow: Record<string, unknown> = {}) {
  const { cred, token } = await orgWithToken(h, org);
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER, org);
  if (flow.topic) await h.admin('PUT', `/admin/v1/orgs/${org}/topics/${flow.topic as string}`, { name: 'News', default: 'subscribed' });
  await startFlow(h, { id: 'f', message: OUTBOX, ...flow }, org);
  const book = async (email: string, messageId: string) => {
    const res = await h.collect(customEvent(cred, { messageId, clientId: clientIdOf(email), traits: { email } }));
    if (res.statusCode !== 200) throw new Error(`collect: ${res.statusCode} ${res.body}`);
  };
  await book(address, 'a-1');
  await book(BOB, 'b-1');
  const run = await runFlow(h, 'f', org);
  if (run.decisions.filter((d) => d.outcome === 'sent').length !== 2) throw new Error(`expected two sends: ${JSON.stringify(run.decisions)}`);
  return { token, book, line: outboxLines(h, org).find((l) => l.email === normalizeEmail(address))! };
}

t.test('(c) the outbox file loses every line of the erased contact; no line of another appended meanwhile is lost', async (t) => {
  const h = await startTestApp(t);
  await fc.assert(
    fc.asyncProperty(orgSlugArb, addressArb, fc.boolean(), async (generated, address, suppress) => {
      const org = freshOrg(generated);
      const { token, book } = await sentTo(h, org, address);
      t.ok(readFileSync(join(h.dataDir, 'outbox', `${org}.jsonl`), 'utf8').includes(normalizeEmail(address)), 'the message is in the file first');
      const erasure = await requestErasure(h, org, `email:${address}`, suppress);
      let finished = false;
      const settled = erasure.done.finally(() => (finished = true));
      // Bob's messages keep coming while the file is rewritten: each run appends one.
      for (let n = 2; !finished; n++) {
        await book(BOB, `b-${n}`);
        await runFlow(h, 'f', org);
      }
      const receipt = await settled;
      await runFlow(h, 'f', org);
      t.same(await copiesOf(h, org, address, token), [], `no copy of ${address} (suppress ${suppress})`);
      t.equal(receipt.removed.outbox, 1, 'the receipt counts the line');
      const delivered = await h.db(org).all<{ send_id: string }>("SELECT send_id FROM flow_sends WHERE email = $1 AND status = 'delivered' ORDER BY send_id", [BOB]);
      const bobs = outboxLines(h, org).filter((l) => l.email === BOB).map((l) => l.sendId).sort();
      t.same(bobs, delivered.map((r) => r.send_id), `each of Bob's ${delivered.length} messages once`);
    }),
    { numRuns: RUNS, endOnFailure: true },
  );
});

t.test("(a) a suppressed contact's old unsubscribe link answers 200, the same pages, and writes nothing, also during the erasure", async (t) => {
  const h = await startTestApp(t);
  // Finding 1 (tokens over Fastify's maxParamLength answer 414) is another fix's: until it lands, the
  // cases here are those whose link today's router takes; then every generated case is.
  const routeLimit = h.app.initialConfig.maxParamLength ?? 100;
  let linked = 0;
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 6, max: 40 }), orgSlugArb, addressArb, async (length, generated, address) => {
      // The link's length is known before anything is made: its token seals the org, address and topic.
      fc.pre(h.app.storageRole!.links.token({ org: freshOrg(generated, length), email: normalizeEmail(address), topic: 'news' }).length <= routeLimit);
      const org = freshOrg(generated, length);
      const { token: bearer, line } = await sentTo(h, org, address, { topic: 'news' });
      const path = new URL(line.content.link).pathname;
      const oneClick = (payload: string, contentType = 'application/x-www-form-urlencoded') => h.app.inject({ method: 'POST', url: path, headers: { 'content-type': contentType }, payload });
      const erasure = await requestErasure(h, org, `email:${address}`, true);
      // A mail client's one-click POSTs racing the erasure: each answered as always.
      let finished = false;
      const settled = erasure.done.finally(() => (finished = true));
      while (!finished) t.equal((await oneClick('List-Unsubscribe=One-Click')).statusCode, 200);
      await settled;

      const page = await h.app.inject({ url: path, headers: { accept: 'text/html' } });
      t.equal(page.statusCode, 200);
      t.match(page.body, /<h1>Unsubscribe<\/h1>.*<form method="post">/s, 'the page with its button');
      const done = await oneClick('List-Unsubscribe=One-Click');
      t.equal(done.statusCode, 200);
      t.match(done.body, /<h1>Unsubscribed<\/h1>.*will not receive <b>News<\/b> any more/s, 'the page says it is done');
      const boundary = 'b0undary';
      const multipart = `--${boundary}\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--${boundary}--\r\n`;
      t.equal((await oneClick(multipart, `multipart/form-data; boundary=${boundary}`)).statusCode, 200);
      t.same(await copiesOf(h, org, address, bearer), [], `no copy of ${address}`);
      linked++;
    }),
    { numRuns: RUNS, endOnFailure: true },
  );
  t.ok(linked >= 1, `${linked} cases went through the link`);
  t.notMatch(await h.metrics(), /audience_consent_changes_total\{source="link",status="unsubscribed"\} [1-9]/, 'no consent change counted');
});

t.test('(b) an admin consent PUT for a suppressed contact writes nothing, before, during and after the erasure', async (t) => {
  const h = await startTestApp(t);
  const suppressed: string[] = [];
  await fc.assert(
    fc.asyncProperty(orgSlugArb, addressArb, async (generated, address) => {
      const org = freshOrg(generated);
      suppressed.push(address);
      const { token } = await sentTo(h, org, address);
      const put = (identity: string, status: string) => h.admin('PUT', `/admin/v1/orgs/${org}/contacts/consent`, { identity, topic: 'all', status });
      t.equal((await put(`email:${address}`, 'subscribed')).statusCode, 200, 'consent recorded before the erasure');
      const erasure = await requestErasure(h, org, `email:${address}`, true);
      let finished = false;
      const settled = erasure.done.finally(() => (finished = true));
      for (let i = 0; !finished; i++) {
        const res = await put(`email:${i % 2 ? address.toUpperCase() : address}`, i % 2 ? 'unsubscribed' : 'subscribed');
        t.ok(res.statusCode === 200 || res.json().code === 'contact_suppressed', `${res.statusCode} ${res.body.slice(0, 80)}`);
      }
      await settled;

      const subscribe = await put(`email:${address.toUpperCase()}`, 'subscribed');
      t.equal(subscribe.statusCode, 409);
      t.match(subscribe.json(), { code: 'contact_suppressed', detail: /suppress/ });
      const unsubscribe = await put(`email:${address}`, 'unsubscribed');
      t.equal(unsubscribe.statusCode, 200, 'unsubscribing is what holds already');
      t.match(unsubscribe.json(), { email: normalizeEmail(address), topic: 'all', status: 'unsubscribed', source: 'suppressed', changedAt: null });
      t.same(await copiesOf(h, org, address, token), [], `no copy of ${address}`);
    }),
    { numRuns: RUNS, endOnFailure: true },
  );
  // Suppression is the org's: another org records the same addresses' consent as any other.
  await h.createOrg('other');
  for (const address of suppressed) {
    const res = await h.admin('PUT', '/admin/v1/orgs/other/contacts/consent', { identity: `email:${address}`, topic: 'all', status: 'subscribed' });
    t.match(res.json(), { email: normalizeEmail(address), status: 'subscribed', source: 'admin' });
  }
});

// The service uses one stream name: a private nats-server, as the other NATS-mode tests do.
const natsTest = hasNatsServerBinary() ? t.test : t.skip;
natsTest('NATS mode: the link, the consent PUT and the outbox file after an erasure with suppress, the same', async (t) => {
  const nats = await startNatsServer(t);
  const h = await startTestApp(t, { natsUrl: nats.url });
  t.equal(h.app.eventLog!.kind, 'jetstream');
  const routeLimit = h.app.initialConfig.maxParamLength ?? 100;
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 6, max: 40 }), orgSlugArb, addressArb, async (length, generated, address) => {
      const org = freshOrg(generated, length);
      const { token, line } = await sentTo(h, org, address, { topic: 'news' });
      const path = new URL(line.content.link).pathname;
      const put = (status: string) => h.admin('PUT', `/admin/v1/orgs/${org}/contacts/consent`, { identity: `email:${address}`, topic: 'news', status });
      const erasure = await requestErasure(h, org, `email:${address}`, true);
      let finished = false;
      const settled = erasure.done.finally(() => (finished = true));
      while (!finished) t.ok([200, 409].includes((await put('subscribed')).statusCode));
      await settled;
      // Finding 1 (another fix): a link longer than the router takes cannot be tried here yet.
      if (path.length - '/unsubscribe/'.length <= routeLimit) {
        const res = await h.app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'List-Unsubscribe=One-Click' });
        t.equal(res.statusCode, 200);
      }
      t.equal((await put('subscribed')).statusCode, 409);
      t.same(await copiesOf(h, org, address, token), [], `no copy of ${address}`);
    }),
    { numRuns: 3, endOnFailure: true },
  );
});
