/**
 * Subscription topics, consent and one-click unsubscribe (issue 24): a real SMTP server and HTTP receiver,
 * the unsubscribe link as a mail client would use it, forged links, consent from the admin API and events.
 */
import { join } from 'node:path';
import t from 'tap';
import { book, customEvent, STORAGE_PROCESS, startTestApp, type TestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';
import { startReceiver } from '../../helpers/http-receiver.js';
import { smtpServer } from '../../helpers/smtp-server.js';
import type { RenderedDecision } from '../../../src/reactions/flows/rules/decision.js';

const OUTBOX = { channel: 'outbox', template: { text: 'hi', link: '{{ unsubscribe_url }}' } };

async function acme(t: Parameters<typeof startTestApp>[0], config: Record<string, unknown> = {}, dataDir?: string) {
  const h = await startTestApp(t, { ...(dataDir ? { dataDir } : {}), config: { publicUrl: 'https://audience.example.com/base', ...config } });
  const cred = (await h.createOrg('acme')).production;
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  return { h, cred };
}

/** The unsubscribe link an outbox message of a run carries (OUTBOX puts it in `link`). */
function linkOf(d: RenderedDecision | undefined): string {
  if (d?.outcome !== 'sent' || d.message.channel !== 'outbox') throw new Error(`not an outbox send: ${JSON.stringify(d)}`);
  return String(d.message.content.link);
}

const outcomes = (run: { decisions: Array<{ eventId: string | null; outcome: string }> }) => Object.fromEntries(run.decisions.map((d) => [d.eventId, d.outcome]));

const unsubscribe = (h: TestApp, path: string, payload: string, contentType = 'application/x-www-form-urlencoded') =>
  h.app.inject({ method: 'POST', url: path, headers: { 'content-type': contentType }, payload });

async function subscriptions(h: TestApp, email: string) {
  const res = await h.admin('GET', `/admin/v1/orgs/acme/contacts?identity=email:${email}`);
  t.equal(res.statusCode, 200);
  return res.json().subscriptions as Array<{ topic: string; status: string; source: string }>;
}

t.test('every marketing e-mail carries one-click unsubscribe; the POST a mail client makes unsubscribes at once', async (t) => {
  const smtp = await smtpServer(t);
  const { h, cred } = await acme(t, { ...STORAGE_PROCESS, smtpUrl: smtp.url });
  t.match((await h.admin('PUT', '/admin/v1/orgs/acme/topics/news', { name: 'News & <offers>', default: 'subscribed' })).json(), { created: true, topic: { topic: 'news', default: 'subscribed' } });
  await startFlow(h, { id: 'mail', scheduleSeconds: 3600, realTime: false, topic: 'news', message: { channel: 'email', template: { subject: 'Hello', text: 'Stop: {{ unsubscribe_url }}' } } });
  await book(h, cred, 'ada@example.com', 'e1');
  await runFlow(h, 'mail');
  t.equal(smtp.mails.length, 1);
  const data = smtp.mails[0]!.data.replace(/\r\n[ \t]+/g, ' ');
  const header = /^List-Unsubscribe: <(https:\/\/audience\.example\.com\/base\/unsubscribe\/[A-Za-z0-9_-]+)>/im.exec(data);
  t.ok(header, 'List-Unsubscribe names the link');
  t.match(data, /^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r?$/im, 'RFC 8058 one-click');
  const link = header![1]!;
  const text = data.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
  t.ok(text.includes(`Stop: ${link}`), 'the template got the same link');
  t.notOk(data.includes('ada%40example.com') || /ada(@|%40)|example\.com/.test(link.slice(link.indexOf('/unsubscribe/'))), 'the link does not show the address');
  const path = new URL(link).pathname.replace(/^\/base/, '');

  // A mail scanner fetches the link: nothing changes.
  const page = await h.app.inject({ method: 'GET', url: path });
  t.equal(page.statusCode, 200);
  t.match(page.headers['content-type'], /text\/html/);
  t.match(page.body, /News &#38; &#60;offers&#62;/, 'the topic name, escaped');
  t.match(page.body, /a\*\*\*@example\.com/);
  t.match(await subscriptions(h, 'ada@example.com'), [{ topic: 'all', status: 'subscribed' }, { topic: 'news', status: 'subscribed', source: 'default' }]);

  // The mail client's one-click POST.
  const done = await unsubscribe(h, path, 'List-Unsubscribe=One-Click');
  t.equal(done.statusCode, 200);
  t.match(done.body, /will not receive <b>News &#38; &#60;offers&#62;<\/b>/);
  t.match(await subscriptions(h, 'ada@example.com'), [{ topic: 'all', status: 'subscribed' }, { topic: 'news', status: 'unsubscribed', source: 'link' }]);
  t.equal((await unsubscribe(h, path, 'List-Unsubscribe=One-Click')).statusCode, 200, 'twice is fine');

  await book(h, cred, 'ada@example.com', 'e2');
  const run = await runFlow(h, 'mail');
  t.same(outcomes(run), { e2: 'unsubscribed' });
  t.equal(smtp.mails.length, 1, 'no second mail');
  const [decision] = (await h.admin('GET', '/admin/v1/orgs/acme/flows/mail/decisions?identity=email:ada@example.com')).json().decisions;
  t.match(decision, { eventId: 'e2', outcome: 'unsubscribed', reason: 'the contact is unsubscribed from topic news (link)' });
  const metrics = await h.metrics();
  t.match(metrics, /audience_consent_changes_total\{source="link",status="unsubscribed"\} 2/);
  t.match(metrics, /audience_flow_decisions_total\{outcome="unsubscribed"\} 1/);
});

t.test('a multipart one-click works; a body that is not one-click changes nothing', async (t) => {
  const { h, cred } = await acme(t);
  await startFlow(h, { id: 'f', scheduleSeconds: 3600, realTime: false, message: OUTBOX });
  await book(h, cred, 'bob@example.com', 'e1');
  const run = await runFlow(h, 'f');
  t.same(outcomes(run), { e1: 'sent' });
  const link = linkOf(run.decisions[0]);
  t.match(link, /^https:\/\/audience\.example\.com\/base\/unsubscribe\//, 'a flow without a topic links to all');
  const path = new URL(link).pathname.replace(/^\/base/, '');
  for (const [payload, type] of [
    ['', 'application/x-www-form-urlencoded'],
    ['List-Unsubscribe=Maybe', 'application/x-www-form-urlencoded'],
    ['{"List-Unsubscribe":"One-Click"}', 'application/json'],
  ]) {
    const res = await unsubscribe(h, path, payload!, type);
    t.ok(res.statusCode === 400 || res.statusCode === 415, `${type} ${payload}: ${res.statusCode}`);
  }
  t.equal((await unsubscribe(h, path, 'x'.repeat(5000))).statusCode, 413, 'a large body is refused');
  t.match(await subscriptions(h, 'bob@example.com'), [{ topic: 'all', status: 'subscribed' }]);
  const boundary = '----x';
  const multipart = `--${boundary}\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--${boundary}--\r\n`;
  t.equal((await unsubscribe(h, path, multipart, `multipart/form-data; boundary=${boundary}`)).statusCode, 200);
  t.match(await subscriptions(h, 'bob@example.com'), [{ topic: 'all', status: 'unsubscribed', source: 'link' }]);
  await book(h, cred, 'bob@example.com', 'e2');
  t.same(outcomes(await runFlow(h, 'f')), { e2: 'unsubscribed' }, 'unsubscribed from all: no marketing flow sends');
});

t.test('forged, altered, cut and foreign links do nothing and say nothing', async (t) => {
  const { h, cred } = await acme(t);
  const other = await acme(t, { webhookSigningKey: 'another-service-master-key-000' }, join(t.testdirName, 'other'));
  await startFlow(h, { id: 'f', scheduleSeconds: 3600, realTime: false, message: OUTBOX });
  await startFlow(other.h, { id: 'f', scheduleSeconds: 3600, realTime: false, message: OUTBOX });
  await book(h, cred, 'ada@example.com', 'e1');
  await book(other.h, other.cred, 'ada@example.com', 'e1');
  const pathOf = async (app: TestApp) => {
    return new URL(linkOf((await runFlow(app, 'f')).decisions[0])).pathname.replace(/^\/base/, '');
  };
  const path = await pathOf(h);
  const foreign = await pathOf(other.h);
  const token = path.slice('/unsubscribe/'.length);
  const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
  const forged = [
    flip(token, 5),
    flip(token, token.length - 3),
    token.slice(0, -4),
    token + 'AAAA',
    'A'.repeat(token.length),
    foreign.slice('/unsubscribe/'.length),
    'x'.repeat(2000),
    '..%2F..%2Fadmin.key',
    '%00',
  ];
  for (const bad of forged) {
    for (const method of ['GET', 'POST'] as const) {
      const res = await h.app.inject({ method, url: `/unsubscribe/${bad}`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, ...(method === 'POST' ? { payload: 'List-Unsubscribe=One-Click' } : {}) });
      t.ok([400, 404, 414].includes(res.statusCode), `${method} ${bad.slice(0, 20)}: ${res.statusCode}`);
      // The address, its domain, the org (not just "ada": a request id's hex digits may spell it).
      t.notOk(/ada(@|%40)|example\.com|acme/.test(res.body), 'nothing about the contact or the org');
      if (res.statusCode === 404) t.equal(res.json().code, 'unsubscribe_link_invalid');
    }
  }
  const browser = await h.app.inject({ method: 'GET', url: `/unsubscribe/${forged[0]}`, headers: { accept: 'text/html,application/xhtml+xml' } });
  t.equal(browser.statusCode, 404);
  t.match(browser.headers['content-type'], /text\/html/, 'a person who opens a broken link gets a page');
  t.notOk(/ada(@|%40)|example\.com|acme/.test(browser.body));
  t.match(await subscriptions(h, 'ada@example.com'), [{ topic: 'all', status: 'subscribed', source: 'default' }], 'still subscribed');
  // The org is deleted: its links stop working.
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/acme')).statusCode, 200);
  t.equal((await unsubscribe(h, path, 'List-Unsubscribe=One-Click')).statusCode, 404);
});

t.test('opt-in topics, consent from the admin API and from events, the latest change wins', async (t) => {
  const { h, cred } = await acme(t);
  await h.admin('PUT', '/admin/v1/orgs/acme/topics/promo', { name: 'Promotions', default: 'unsubscribed' });
  await startFlow(h, { id: 'promo', scheduleSeconds: 3600, realTime: false, topic: 'promo', message: OUTBOX });
  await book(h, cred, 'ada@example.com', 'e1');
  t.same(outcomes(await runFlow(h, 'promo')), { e1: 'unsubscribed' }, 'an opt-in topic sends nothing before consent');

  const put = await h.admin('PUT', '/admin/v1/orgs/acme/contacts/consent', { identity: 'email:Ada@Example.com', topic: 'promo', status: 'subscribed' });
  t.equal(put.statusCode, 200);
  t.match(put.json(), { email: 'ada@example.com', topic: 'promo', status: 'subscribed', source: 'admin' });
  await book(h, cred, 'ada@example.com', 'e2');
  t.same(outcomes(await runFlow(h, 'promo')), { e2: 'sent' });

  // An event from an hour ago that unsubscribes is older than the admin's change: it does not win.
  const sentAt = Date.now();
  await h.collect({ ...customEvent(cred, { messageId: 'old-unsub', clientId: 'c-ada', sentAt, timestamp: new Date(sentAt - 3_600_000).toISOString() }), type: 'identify', event: undefined, properties: undefined, traits: { email: 'ada@example.com', subscriptions: { promo: 'unsubscribed' } } });
  await book(h, cred, 'ada@example.com', 'e3');
  t.same(outcomes(await runFlow(h, 'promo')), { e3: 'sent' }, 'an older change does not override a newer one');
  // A new event that unsubscribes does.
  await book(h, cred, 'ada@example.com', 'unsub', { traits: { email: 'ada@example.com', subscriptions: { promo: 'unsubscribed' } } });
  await book(h, cred, 'ada@example.com', 'e4');
  const run = outcomes(await runFlow(h, 'promo'));
  t.equal(run.e4, 'unsubscribed', 'consent from an event applies to the next run');
  t.match(await subscriptions(h, 'ada@example.com'), [{ topic: 'all' }, { topic: 'promo', status: 'unsubscribed', source: 'event' }]);

  const bad = await book(h, cred, 'ada@example.com', 'bad', { traits: { email: 'ada@example.com', subscriptions: { promo: 'maybe' } } });
  t.equal(bad.statusCode, 412, 'a consent value other than subscribed/unsubscribed is refused at collect');
});

t.test('transactional flows are sent whatever the consent, with no unsubscribe link', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const { h, cred } = await acme(t);
  await startFlow(h, { id: 'receipt', scheduleSeconds: 3600, realTime: false, transactional: true, message: { channel: 'webhook', url: receiver.url, template: { body: { kind: 'receipt' } } } });
  await startFlow(h, { id: 'hook', scheduleSeconds: 3600, realTime: false, message: { channel: 'webhook', url: receiver.url, template: { body: { kind: 'marketing' } } } });
  await book(h, cred, 'ada@example.com', 'e1');
  await runFlow(h, 'hook');
  const marketing = receiver.received.find((r) => JSON.parse(r.body).kind === 'marketing')!;
  const link = JSON.parse(marketing.body).unsubscribe_url as string;
  t.match(link, /^https:\/\/audience\.example\.com\/base\/unsubscribe\//, 'the webhook payload carries the link');
  t.equal(marketing.headers['list-unsubscribe'], `<${link}>`);
  await h.admin('PUT', '/admin/v1/orgs/acme/contacts/consent', { identity: 'email:ada@example.com', topic: 'all', status: 'unsubscribed' });
  await book(h, cred, 'ada@example.com', 'e2');
  t.same(outcomes(await runFlow(h, 'receipt')), { e1: 'sent', e2: 'sent' });
  t.same(outcomes(await runFlow(h, 'hook')), { e2: 'unsubscribed' });
  const receipts = receiver.received.filter((r) => JSON.parse(r.body).kind === 'receipt');
  t.equal(receipts.length, 2);
  t.same(JSON.parse(receipts[0]!.body), { kind: 'receipt' }, 'no link in a transactional payload');
  t.equal(receipts[0]!.headers['list-unsubscribe'], undefined);
});

t.test('topics and consent refuse what they cannot record', async (t) => {
  const { h } = await acme(t);
  const flow = (extra: Record<string, unknown>) =>
    h.admin('POST', '/admin/v1/orgs/acme/flows', { id: 'f', name: 'n', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', message: OUTBOX, ...extra });
  t.match((await flow({ topic: 'nope' })).json(), { status: 422, code: 'invalid_flow', errors: [{ path: '/topic', message: /topic nope does not exist/ }] });
  t.match((await flow({ topic: 'all', transactional: true })).json(), { status: 422, errors: [{ path: '/topic', message: /transactional flow has no topic/ }] });
  t.match((await flow({ topic: 'Bad-Name' })).json(), { status: 422, errors: [{ path: '/topic' }] });
  const consent = (body: Record<string, unknown>) => h.admin('PUT', '/admin/v1/orgs/acme/contacts/consent', body);
  t.match((await consent({ identity: 'email:a@example.com', topic: 'nope', status: 'unsubscribed' })).json(), { status: 404, code: 'topic_not_found' });
  t.match((await consent({ identity: 'user_id:ghost', topic: 'all', status: 'unsubscribed' })).json(), { status: 404, code: 'contact_not_found' });
  t.match((await consent({ identity: 'phone:1', topic: 'all', status: 'unsubscribed' })).json(), { status: 400, code: 'invalid_identity' });
  t.match((await consent({ identity: 'email:a@example.com', topic: 'all', status: 'gone' })).json(), { status: 400, code: 'invalid_request' });
  t.match((await consent({ identity: 'email:a@example.com', topic: 'all', status: 'unsubscribed', extra: 1 })).json(), { status: 400 });
  for (const [topic, body] of [
    ['UPPER', { name: 'x', default: 'subscribed' }],
    ['ok', { name: '', default: 'subscribed' }],
    ['ok', { name: 'x', default: 'maybe' }],
    ['ok', { name: 'x' }],
    ['__proto__', { name: 'x', default: 'subscribed' }],
  ] as const) {
    t.equal((await h.admin('PUT', `/admin/v1/orgs/acme/topics/${topic}`, body)).statusCode, 400, `${topic} ${JSON.stringify(body)}`);
  }
  t.equal((await h.app.inject({ method: 'PUT', url: '/admin/v1/orgs/acme/topics/ok', payload: { name: 'x', default: 'subscribed' } })).statusCode, 401, 'the admin key is needed');
  await h.createOrg('other');
  await h.admin('PUT', '/admin/v1/orgs/acme/topics/acme_only', { name: 'A', default: 'subscribed' });
  t.notOk((await h.admin('GET', '/admin/v1/orgs/other/topics')).json().topics.some((x: { topic: string }) => x.topic === 'acme_only'), "one org's topics are its own");
  t.same((await h.admin('GET', '/admin/v1/orgs/acme/topics')).json().topics.map((x: { topic: string }) => x.topic), ['all', 'acme_only']);
});

t.test('a topic is deleted only when no flow names it; its contacts\' choices outlive it; never another org\'s', async (t) => {
  const { h, cred } = await acme(t);
  await h.createOrg('beta');
  await h.admin('PUT', '/admin/v1/orgs/acme/topics/promo', { name: 'Promotions', default: 'subscribed' });
  await h.admin('PUT', '/admin/v1/orgs/beta/topics/promo', { name: 'Beta promotions', default: 'subscribed' });
  // A paused flow names it too: whatever a flow's status, it would not start again without its topic.
  await startFlow(h, { id: 'promo_a', scheduleSeconds: 3600, realTime: false, topic: 'promo', message: OUTBOX });
  await startFlow(h, { id: 'promo_b', scheduleSeconds: 3600, realTime: false, topic: 'promo', message: OUTBOX });
  await h.admin('POST', '/admin/v1/orgs/acme/flows/promo_b/pause');
  await book(h, cred, 'ada@example.com', 'e1');
  await h.compacted();
  t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/contacts/consent', { identity: 'email:ada@example.com', topic: 'promo', status: 'unsubscribed' })).statusCode, 200);

  const refused = await h.admin('DELETE', '/admin/v1/orgs/acme/topics/promo');
  t.equal(refused.statusCode, 409);
  t.match(refused.json(), { code: 'topic_in_use', flows: ['promo_a', 'promo_b'], detail: /promo_a, promo_b/ }, 'names every flow that uses it');
  t.match((await h.admin('DELETE', '/admin/v1/orgs/acme/topics/all')).json(), { code: 'topic_in_use', flows: [] }, 'all cannot be deleted');
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/acme/topics/nope')).statusCode, 404);

  // The flows move to another topic: the delete goes through, in acme only.
  await h.admin('PUT', '/admin/v1/orgs/acme/topics/news', { name: 'News', default: 'subscribed' });
  for (const id of ['promo_a', 'promo_b']) {
    const flow = (await h.admin('GET', `/admin/v1/orgs/acme/flows/${id}`)).json().definition as Record<string, unknown>;
    t.equal((await h.admin('PUT', `/admin/v1/orgs/acme/flows/${id}`, { ...flow, topic: 'news' })).statusCode, 200, `${id} now names news`);
  }
  const deleted = await h.admin('DELETE', '/admin/v1/orgs/acme/topics/promo');
  t.equal(deleted.statusCode, 200, deleted.body);
  t.same(deleted.json(), { topic: 'promo', deleted: true });
  t.notOk((await h.admin('GET', '/admin/v1/orgs/acme/topics')).json().topics.some((x: { topic: string }) => x.topic === 'promo'), 'gone from the list');
  t.ok((await h.admin('GET', '/admin/v1/orgs/beta/topics')).json().topics.some((x: { topic: string }) => x.topic === 'promo'), "beta's topic of the same name is untouched");
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/acme/topics/promo')).statusCode, 404, 'a second delete: not found');

  // Made again under the same name: Ada's unsubscribe is where it was.
  await h.admin('PUT', '/admin/v1/orgs/acme/topics/promo', { name: 'Promotions again', default: 'subscribed' });
  t.match((await subscriptions(h, 'ada@example.com')).find((s) => s.topic === 'promo'), { status: 'unsubscribed', source: 'admin' });
});
