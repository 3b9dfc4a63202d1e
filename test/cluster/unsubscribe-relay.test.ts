/**
 * Unsubscribe links in the cluster layout (issue 37): two storage shards and an `api` process without org
 * databases, real processes on a real nats-server, one WEBHOOK_SIGNING_KEY for all (as `npm run cluster`
 * sets it). Links of generated recipients (orgs up to 40 characters, addresses up to 320, topics up to 64)
 * are clicked — the GET page and the RFC 8058 POST — through the api process and through the shard that
 * does not own the org; each answers as the owning shard answers the same request itself (status, type,
 * body, headers), and the consent is read back on the owner through the admin relay. Forged links answer
 * the owner's 404; an owner that is down, 503 shard_unavailable.
 *
 * The links are sealed here with the service's own UnsubscribeLinks and the processes' key: the token is a
 * pure function of key, org, address and topic (test/reactions/flows/unsubscribe-any-address.test.ts checks the
 * links in real mail).
 */
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { RequestError, connect } from '@nats-io/transport-node';
import { decodeAnswer, encodeRequest } from '../../src/cluster/relay-message.js';
import { shardOf } from '../../src/core/shard.js';
import { UnsubscribeLinks } from '../../src/reactions/consent/unsubscribe-link.js';
import { emailAddress, orgSlug, topicName } from '../helpers/issued-values.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import { ADMIN_KEY, spawnServer, spawnSplitLayout } from '../helpers/server-process.js';
import { scaled } from '../helpers/deadline.js';

// Three processes start from source on two cores (~3 s each, more under load).
t.setTimeout(scaled(180_000));

const KEY = 'cluster-unsubscribe-test-signing-key-0123456789';
const links = new UnsubscribeLinks(KEY, 'https://audience.example.com');
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const ONE_CLICK = 'List-Unsubscribe=One-Click';
const BOUNDARY = '----audience-test';
/** The one-click body as some mailbox providers send it (RFC 8058 allows multipart/form-data). */
const MULTIPART = {
  headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
  body: `--${BOUNDARY}\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--${BOUNDARY}--\r\n`,
};
/** Set per process or per connection: everything else of an answer must be the owner's. */
const PER_PROCESS = new Set(['date', 'request-id', 'content-length', 'connection', 'keep-alive', 'transfer-encoding']);

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

async function call(base: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  const res = await fetch(`${base}${path}`, init);
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!PER_PROCESS.has(name)) headers[name] = value;
  });
  return { status: res.status, headers, body: await res.text() };
}

/** A problem's requestId names the process's own request: compared without it. */
function comparable(answer: Answer): Answer {
  if (!answer.headers['content-type']?.startsWith('application/problem+json')) return answer;
  const { requestId: _id, ...problem } = JSON.parse(answer.body) as Record<string, unknown>;
  return { ...answer, body: JSON.stringify(problem) };
}

async function admin(base: string, method: string, path: string, body?: string, type = 'application/json'): Promise<Answer> {
  return call(base, path, { method, headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body === undefined ? {} : { 'content-type': type }) }, ...(body === undefined ? {} : { body }) });
}

async function until<T>(what: string, deadlineMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + scaled(deadlineMs);
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${scaled(deadlineMs)} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

if (!hasNatsServerBinary()) {
  t.test('unsubscribe links across processes', { skip: 'nats-server binary not installed' }, () => {});
} else {
  t.test('unsubscribe links through an api process and a non-owning shard', async (t) => {
    const root = t.testdir();
    const nats = await startNatsServer(t);
    const common = { NATS_URL: nats.url, WEBHOOK_SIGNING_KEY: KEY, QUERIES_DIR: join(root, 'queries'), LOG_LEVEL: 'warn' };
    const { shards, front: api } = await spawnSplitLayout(t, root, common, 'api');
    const nc = await connect({ servers: nats.url });
    t.teardown(() => nc.close());

    /** An org made on the api process, served by its shard (its admin subject answers). */
    const made = new Set<string>();
    const org = async (slug: string): Promise<void> => {
      if (made.has(slug)) return;
      made.add(slug);
      const created = await admin(api.url, 'POST', '/admin/v1/orgs', JSON.stringify({ slug, name: slug }));
      if (created.status !== 201) throw new Error(`org ${slug}: ${created.status} ${created.body}`);
      await until(`org ${slug} served by its shard`, 20_000, async () => ((await admin(api.url, 'GET', `/admin/v1/orgs/${slug}/topics`)).status === 200 ? true : undefined));
    };
    const subscriptions = async (slug: string, email: string) => {
      const res = await admin(api.url, 'GET', `/admin/v1/orgs/${slug}/contacts?identity=${encodeURIComponent(`email:${email}`)}`);
      return res.status === 200 ? (JSON.parse(res.body) as { subscriptions: Array<{ topic: string; status: string; source: string }> }).subscriptions : undefined;
    };

    let clicked = 0;
    let longest = 0;
    await t.test('generated recipients: the page and one click through the api process and the other shard', async (t) => {
      await fc.assert(
        fc.asyncProperty(orgSlug(), topicName(), fc.uniqueArray(fc.tuple(emailAddress(), fc.boolean()), { minLength: 2, maxLength: 3, selector: ([a]) => a.toLowerCase() }), async (slug, topic, people) => {
          await org(slug);
          const owner = shards[shardOf(slug, 2)]!;
          const other = shards[1 - shardOf(slug, 2)]!;
          if (topic !== 'all') {
            const put = await admin(api.url, 'PUT', `/admin/v1/orgs/${slug}/topics/${topic}`, JSON.stringify({ name: `News ${topic}`, default: 'subscribed' }));
            if (put.status !== 200 && put.status !== 201) throw new Error(`topic ${topic}: ${put.status} ${put.body}`);
          }
          const csv = `email_address\n${people.map(([a]) => a).join('\n')}\n`;
          const imported = await admin(api.url, 'POST', `/admin/v1/orgs/${slug}/contacts/import`, csv, 'text/csv');
          if (imported.status !== 200) throw new Error(`import: ${imported.status} ${imported.body}`);
          for (const [written, multipart] of people) {
            const email = written.toLowerCase();
            const path = `/unsubscribe/${links.token({ org: slug, email, topic })}`;
            longest = Math.max(longest, path.length - '/unsubscribe/'.length);
            const label = `${email} in ${slug} (${topic})`;
            for (const [method, init] of [
              ['GET', { headers: { accept: 'text/html' } }],
              ['POST', { method: 'POST', ...(multipart ? MULTIPART : { headers: FORM, body: ONE_CLICK }) }],
            ] as const) {
              // Relayed first, so the write is the relay's; the owner's own answer to the same request after it.
              const viaApi = await call(api.url, path, init);
              const viaOther = await call(other.url, path, init);
              const direct = await call(owner.url, path, init);
              if (direct.status !== 200) throw new Error(`${label}: ${method} on the owner ${direct.status} ${direct.body}`);
              for (const [where, answer] of [['the api process', viaApi], ['the other shard', viaOther]] as const) {
                if (JSON.stringify(answer) !== JSON.stringify(direct)) throw new Error(`${label}: ${method} through ${where} ${JSON.stringify(answer)} is not the owner's ${JSON.stringify(direct)}`);
              }
            }
            const consent = await until(`${label}: contact on the owner`, 10_000, () => subscriptions(slug, email));
            if (!consent.some((s) => s.topic === topic && s.status === 'unsubscribed' && s.source === 'link')) throw new Error(`${label}: consent ${JSON.stringify(consent)}`);
            clicked++;
          }
        }),
        { numRuns: 4, endOnFailure: true },
      );
      t.ok(clicked >= 8, `${clicked} recipients unsubscribed through the api process, answered as the owner answers`);
      t.ok(longest > 100, `the longest token was ${longest} characters`);
    });

    // An org on each shard for the fixed cases below.
    const slugs = [0, 1].map((index) => ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot'].find((s) => shardOf(s, 2) === index)!);
    for (const slug of slugs) await org(slug);

    await t.test('forged and foreign links: the owner’s 404, relayed nowhere', async (t) => {
      const slug = slugs[0]!;
      const owner = shards[0]!;
      const token = links.token({ org: slug, email: 'carol.67d5f8@example.com', topic: 'all' });
      const forged: Array<[string, string]> = [
        ['another service', new UnsubscribeLinks('another-service-master-key-000', '').token({ org: slug, email: 'carol.67d5f8@example.com', topic: 'all' })],
        ['a changed middle', token.slice(0, 40) + (token[40] === 'A' ? 'B' : 'A') + token.slice(41)],
        ['an org that does not exist', links.token({ org: 'nowhere', email: 'carol.67d5f8@example.com', topic: 'all' })],
      ];
      for (const [name, bad] of forged) {
        for (const [method, init] of [
          ['GET', {}],
          ['GET html', { headers: { accept: 'text/html' } }],
          ['POST', { method: 'POST', headers: FORM, body: ONE_CLICK }],
        ] as const) {
          const direct = comparable(await call(owner.url, `/unsubscribe/${bad}`, init));
          t.equal(direct.status, 404, `${name}: ${method} on the owner`);
          t.same(comparable(await call(api.url, `/unsubscribe/${bad}`, init)), direct, `${name}: ${method} through the api process`);
          t.same(comparable(await call(shards[1]!.url, `/unsubscribe/${bad}`, init)), direct, `${name}: ${method} through the other shard`);
        }
      }
      const wrongBody = await call(api.url, `/unsubscribe/${token}`, { method: 'POST', headers: FORM, body: 'List-Unsubscribe=No' });
      t.same(comparable(wrongBody), comparable(await call(owner.url, `/unsubscribe/${token}`, { method: 'POST', headers: FORM, body: 'List-Unsubscribe=No' })), 'a body that is not one click: the same 400');
      const tooLarge = { method: 'POST', headers: FORM, body: `${ONE_CLICK}&${'x'.repeat(5000)}` };
      t.same(comparable(await call(api.url, `/unsubscribe/${token}`, tooLarge)), comparable(await call(owner.url, `/unsubscribe/${token}`, tooLarge)), 'a body over 4096 bytes: the same 413');
    });

    await t.test("a link sent on another org's subject: refused by the shard, nothing written", async (t) => {
      // Two orgs of shard 0: the subject names one, the token the other.
      const [subjectOrg, linkOrg] = ['golf', 'hotel', 'india', 'juliet', 'kilo', 'lima'].filter((s) => shardOf(s, 2) === 0);
      for (const slug of [subjectOrg!, linkOrg!]) await org(slug);
      const imported = await admin(api.url, 'POST', `/admin/v1/orgs/${linkOrg}/contacts/import`, 'email_address\nerin@example.com\n', 'text/csv');
      t.equal(imported.status, 200);
      const ask = async (subject: string, token: string) => {
        const headers = encodeRequest({ method: 'POST', url: `/unsubscribe/${token}`, requestId: 'test-1' }, FORM);
        const msg = await nc.request(subject, new TextEncoder().encode(ONE_CLICK), { timeout: 10_000, headers });
        const answer = decodeAnswer(msg.headers, msg.data)!;
        const text = Buffer.from(answer.body).toString('utf8');
        return { status: answer.status, body: answer.status === 200 ? text : (JSON.parse(text) as { code: string }) };
      };
      const token = links.token({ org: linkOrg!, email: 'erin@example.com', topic: 'all' });
      t.match(await ask(`audience.admin.${subjectOrg}`, token), { status: 400, body: { code: 'invalid_request' } }, 'the token names another org');
      t.match(await ask(`audience.admin.${subjectOrg}`, token.slice(0, -2)), { status: 400, body: { code: 'invalid_request' } }, 'a token that does not open');
      const consentOf = async () => (await subscriptions(linkOrg!, 'erin@example.com'))?.map((x) => `${x.topic} ${x.status} ${x.source}`);
      t.same(await consentOf(), ['all subscribed default'], 'the linked org is untouched');
      t.equal((await ask(`audience.admin.${linkOrg}`, token)).status, 200, "on its own org's subject, without the admin key, the link is answered");
      t.same(await consentOf(), ['all unsubscribed link']);
    });

    await t.test('an api process without WEBHOOK_SIGNING_KEY: says so at start, and answers links 404', async (t) => {
      const keyless = await spawnServer(t, { ...common, WEBHOOK_SIGNING_KEY: '', ROLES: 'api', DATA_DIR: join(root, 'api-keyless') });
      t.match(keyless.stderr(), /WEBHOOK_SIGNING_KEY is not set: this process cannot read which org an unsubscribe link is for/);
      const path = `/unsubscribe/${links.token({ org: slugs[0]!, email: 'dora@example.com', topic: 'all' })}`;
      t.equal((await call(keyless.url, path)).status, 404);
      t.equal((await call(api.url, path)).status, 200, 'while an api process with the key answers it');
      await keyless.stop();
    });

    await t.test('the owner down: 503 shard_unavailable with Retry-After, naming no org', async (t) => {
      const slug = slugs[1]!;
      const path = `/unsubscribe/${links.token({ org: slug, email: 'dora@example.com', topic: 'all' })}`;
      t.equal((await call(api.url, path)).status, 200, 'served while the owner runs');
      await shards[1]!.kill9();
      // Once nats-server has dropped the dead shard's subscription; a request it had already handed to the
      // shard would wait out the relay's 30 s instead (the same 503, later).
      await until('the subscription gone', 10_000, () =>
        nc.request(`audience.admin.${slug}`, new Uint8Array(), { timeout: 1_000 }).then(
          () => undefined,
          (error: unknown) => (error instanceof RequestError && error.isNoResponders() ? true : undefined),
        ),
      );
      for (const init of [{}, { method: 'POST', headers: FORM, body: ONE_CLICK }]) {
        const down = await until('503 once the owner is gone', 10_000, async () => {
          const answer = await call(api.url, path, init);
          return answer.status === 200 ? undefined : answer;
        });
        t.equal(down.status, 503);
        t.equal(down.headers['retry-after'], '1');
        const problem = JSON.parse(down.body) as { code: string; detail: string };
        t.equal(problem.code, 'shard_unavailable');
        t.notOk(down.body.includes(slug), 'the answer does not name the org');
      }
      t.equal((await call(shards[0]!.url, path)).status, 503, 'the other shard answers the same');
    });
  });
}
