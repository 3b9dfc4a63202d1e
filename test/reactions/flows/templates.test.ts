/**
 * Flow templates (issue 12, items 6 and 7): no template reaches the file system, and rendering runs on
 * the template worker with limits per message, so a costly template fails its own rows while the
 * thread that answers HTTP keeps answering.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import t from 'tap';
import { ADMIN_KEY, customEvent, startTestApp, type TestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';
import { startReceiver } from '../../helpers/http-receiver.js';

type Cred = { production: { partnerId: string; partnerSecret: string } };

async function acme(t: Parameters<typeof startTestApp>[0]) {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme', { audienceApi: true })) as Cred;
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  return { h, cred };
}

const book = (h: TestApp, cred: Cred, messageId: string, properties: Record<string, unknown>, email = 'ada@example.com') =>
  h.collect(
    customEvent(cred.production, { messageId, clientId: `c-${messageId}`, traits: { email }, properties: { eventName: 'booking_completed', properties } }),
  );

const outbox = (text: string) => ({ channel: 'outbox', template: { text } });

t.test('include, render and layout never read a file: every path fails its row and no secret leaves', async (t) => {
  const { h, cred } = await acme(t);
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());

  // Secrets an attacker would want: the admin key file, the webhook signing key, files with a marker in
  // DATA_DIR and in the process's working directory (liquidjs's default root).
  const marker = `MARKER-${randomBytes(12).toString('hex')}`;
  writeFileSync(join(h.dataDir, 'admin.key'), `${ADMIN_KEY}\n`);
  const signingKey = readFileSync(join(h.dataDir, 'webhook.key'), 'utf8').trim();
  const dataFile = join(h.dataDir, 'notes.txt');
  writeFileSync(dataFile, marker);
  const cwdName = `template-probe-${randomBytes(6).toString('hex')}.txt`;
  const cwdFile = join(process.cwd(), cwdName);
  writeFileSync(cwdFile, marker);
  t.teardown(() => rmSync(cwdFile, { force: true }));
  const secrets = [marker, ADMIN_KEY, signingKey];

  const paths = [
    'data/admin.key',
    'data/webhook.key',
    join(h.dataDir, 'admin.key'),
    join(h.dataDir, 'webhook.key'),
    dataFile,
    relative(process.cwd(), dataFile),
    cwdName,
    `./${cwdName}`,
    cwdFile,
    `../${basename(process.cwd())}/${cwdName}`,
    `../../../../../../../../..${cwdFile}`,
    'package.json',
    '/etc/hostname',
  ];
  const flows: Record<string, Record<string, unknown>> = {
    inc: outbox('{% include event.properties.path %}'),
    ren: outbox('{% render event.properties.path %}'),
    lay: outbox('{% layout event.properties.path %}body'),
    lit: outbox("{% include 'data/admin.key' %}{% render 'data/webhook.key' %}"),
    abs: outbox(`{% include '${cwdFile}' %}`),
    rel: outbox(`{% render '${cwdName}' %}`),
    hook: { channel: 'webhook', url: receiver.url, template: { body: { leaked: '{% include event.properties.path %}' } } },
    hookstr: { channel: 'webhook', url: receiver.url, template: { body: '{"leaked": "{% layout event.properties.path %}"}' } },
  };
  for (const [id, message] of Object.entries(flows)) await startFlow(h, { id, scheduleSeconds: 3600, realTime: false, message });
  for (const [i, path] of paths.entries()) t.equal((await book(h, cred, `p${i}`, { path }, `user${i}@example.com`)).statusCode, 200);

  for (const id of Object.keys(flows)) {
    const run = await runFlow(h, id);
    t.equal(run.decisions.length, paths.length, `${id}: one decision per row`);
    for (const [i, d] of run.decisions.entries()) {
      t.equal(d.outcome, 'failed', `${id} ${paths[i]}: failed`);
      t.match(d.reason, /cannot read files/, `${id} ${paths[i]}: says why`);
    }
    const stored = await h.admin('GET', `/admin/v1/orgs/acme/flows/${id}/decisions?identity=email:user0@example.com`);
    t.match(stored.json().decisions, [{ outcome: 'failed', reason: /cannot read files/ }], `${id}: the stored decision says why`);
    for (const secret of secrets) t.notOk(JSON.stringify(run.decisions).includes(secret), `${id}: no decision carries a secret`);
  }
  const outboxFile = join(h.dataDir, 'outbox', 'acme.jsonl');
  const written = existsSync(outboxFile) ? readFileSync(outboxFile, 'utf8') : '';
  for (const secret of secrets) t.notOk(written.includes(secret), 'no outbox line carries a secret');
  t.same(receiver.received, [], 'no webhook was sent');
});

t.test('costly templates fail their rows naming the limit; lookups and collect are answered while they render', async (t) => {
  const { h, cred } = await acme(t);
  const token = (await h.admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@example.com' })).json().token as string;
  const kinds: Record<string, [string, RegExp]> = {
    loops: ['{% for i in (1..100000) %}{% for j in (1..100000) %}{% endfor %}{% endfor %}', /loop iterations limit exceeded|template render limit exceeded/],
    // Sorting this much trips the time limit or, first on some runs, the allocation limit: either is named.
    sorts: ['{% for i in (1..100000) %}{{ (1..3000) | sort_natural | first }}{% endfor %}', /template render limit exceeded|memory alloc limit exceeded/],
    append: ["{% assign s = 'xxxxxxxxxxxxxxxx' %}{% for i in (1..64) %}{% assign s = s | append: s %}{% endfor %}{{ s }}", /memory alloc limit exceeded/],
    output: ['{% for i in (1..20000) %}{{ event.properties.pad }}{% endfor %}', /output size limit exceeded/],
    recursion: ['{% for a in (1..4) %}'.repeat(30) + 'x' + '{% endfor %}'.repeat(30), /loop iterations limit exceeded|template render limit exceeded/],
  };
  await startFlow(h, {
    id: 'costly',
    scheduleSeconds: 3600, realTime: false,
    branches: Object.entries(kinds).map(([kind, [text]]) => ({ when: { field: 'event.properties.kind', op: 'eq', value: kind }, message: outbox(text) })),
    message: outbox('Enjoy {{ event.properties.city }}, {{ contact.email_address }}'),
  });
  const rows = [...Object.keys(kinds), ...Object.keys(kinds), 'plain'];
  for (const [i, kind] of rows.entries()) {
    t.equal((await book(h, cred, `k${i}`, { kind, city: 'Lisbon', pad: 'p'.repeat(100) }, `user${i}@example.com`)).statusCode, 200);
  }
  await h.compacted();

  // Requests made once the run is rendering must be answered before its rendering ends.
  const renderer = h.app.flowsRole!.renderer!;
  const order: string[] = [];
  let rendering!: () => void;
  const started = new Promise<void>((resolve) => (rendering = resolve));
  const render = renderer.render.bind(renderer);
  renderer.render = (jobs) => {
    rendering();
    return render(jobs).finally(() => order.push('rendered'));
  };
  const run = runFlow(h, 'costly');
  await started;
  const health = await h.app.inject({ method: 'GET', url: '/healthz' });
  order.push('healthz');
  const lookup = await h.app.inject({
    method: 'GET',
    url: '/audience/v2/contacts?identity=email:user0@example.com',
    headers: { accept: 'application/json', authorization: `Bearer ${token}` },
  });
  order.push('lookup');
  const collected = await book(h, cred, 'during-render', { kind: 'plain', city: 'Porto' });
  order.push('collect');
  const summary = await run;
  t.equal(health.statusCode, 200);
  t.equal(lookup.statusCode, 200);
  t.equal(collected.statusCode, 200);
  t.same(order, ['healthz', 'lookup', 'collect', 'rendered'], 'the HTTP thread answered while the templates rendered');

  t.equal(summary.decisions.length, rows.length);
  for (const [i, d] of summary.decisions.entries()) {
    const kind = rows[i]!;
    if (kind === 'plain') {
      t.equal(d.outcome, 'sent', 'an ordinary template in the same run still renders');
      t.same(d.outcome === 'sent' ? d.message : undefined, { channel: 'outbox', content: { text: `Enjoy Lisbon, user${i}@example.com` } });
      continue;
    }
    t.equal(d.outcome, 'failed', `${kind}: failed`);
    t.match(d.reason, /^the template is over a limit: /, `${kind}: over a limit`);
    t.match(d.reason, kinds[kind]![1], `${kind}: names the limit`);
    t.match(d.reason, /simplify the template/, `${kind}: says how to fix it`);
  }
  const written = readFileSync(join(h.dataDir, 'outbox', 'acme.jsonl'), 'utf8').trim().split('\n');
  t.equal(written.length, 1, 'only the ordinary row reached the outbox');
});
