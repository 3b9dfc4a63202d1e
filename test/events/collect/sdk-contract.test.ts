/**
 * The SDK contract (issue 40): the mapping table in docs/partners.md, read by this test, checked through
 * every real client a team runs unchanged — Segment's analytics-node, RudderStack's rudder-sdk-node,
 * @jitsu/js in Node, and analytics.js in Chromium both as Segment's standard snippet (self-hosted here)
 * and as the npm package (AnalyticsBrowser). Each row of the table has a contract below that takes its
 * expectations from the row's own cells (its names, its `a` → `b` pairs, its limits), so a row the
 * service does not honour fails, and so does a row with no contract (or a contract whose row is gone).
 * Rows about transport and identity stitching rather than one call's mapping are checked in the files
 * ELSEWHERE names.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Analytics as SegmentAnalytics } from '@segment/analytics-node';
import RudderAnalytics from '@rudderstack/rudder-sdk-node';
import { jitsuAnalytics } from '@jitsu/js';
import type { Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { launchChromium, watchPage } from '../../helpers/browser.js';
import { ROOT } from '../../helpers/paths.js';

// --- The table -------------------------------------------------------------------------------------

interface TableRow {
  segment: string;
  audience: string;
  notes: string;
}

/** The rows of the table whose header is `| Segment | Audience | notes |`. */
function mappingTable(): TableRow[] {
  const lines = readFileSync(join(ROOT, 'docs/partners.md'), 'utf8').split('\n');
  const start = lines.findIndex((l) => /^\| Segment \| Audience \| notes \|$/.test(l.trim()));
  if (start < 0) throw new Error('docs/partners.md has no | Segment | Audience | notes | table');
  const rows: TableRow[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line.slice(1, -1).split(' | ').map((c) => c.trim());
    rows.push({ segment: cells[0]!, audience: cells[1]!, notes: cells.slice(2).join(' | ') });
  }
  return rows;
}

/** The `code` spans of a cell, in order. */
const codes = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
/** The `a` → `b` pairs of a cell. */
const arrows = (cell: string): Array<[string, string]> => [...cell.matchAll(/`([^`]+)`(?: \((?:[^()]|\([^()]*\))*\))? → `([^`]+)`/g)].map((m) => [m[1]!, m[2]!]);

/** Rows checked by other tests: the first cell's start → the file that checks it. */
const ELSEWHERE: Record<string, string> = {
  'write key': 'test/events/collect/tracking-sdks.test.ts (each SDK authenticates; a revoked key is an error) and tracking.test.ts (X-Write-Key, body writeKey)',
  '`anonymousId`, else `userId`': 'test/events/collect/tracking.test.ts (long ids hashed)',
  '`traits.email`, else': 'test/events/collect/tracking.test.ts (context.traits.email; an invalid address rejected)',
  '`identify` with an e-mail': 'test/events/collect/tracking-sdks.test.ts (an anonymous track joins the person identified)',
  '`alias`': 'test/events/collect/tracking-sdks.test.ts and test/events/compaction/identity.test.ts',
  '`messageId`': 'test/events/collect/tracking-sdks.test.ts (a batch analytics-node retries is stored once)',
  '`/v1/import`': 'test/events/collect/tracking.test.ts',
};

// --- The clients -----------------------------------------------------------------------------------

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Props = Record<string, any>;
type Need = 'screen' | 'group' | 'numericUserId' | 'backDated';
/** One call as a browser SDK makes it (the person's userId set by the identify before it). */
type Call =
  | { type: 'identify'; userId: string | number; traits: Props }
  | { type: 'track'; event: string; properties?: Props; timestamp?: string; context?: Props; integrations?: Props }
  | { type: 'page'; name: string; properties?: Props }
  | { type: 'screen'; name: string; properties?: Props }
  | { type: 'group'; groupId: string; traits?: Props };

interface Client {
  name: string;
  /** What the SDK's API cannot express, and why; a contract needing it leaves this client out, saying so. */
  lacks: Partial<Record<Need, string>>;
  /** The title the SDK itself puts on every page call, when it does (analytics.js: the document's). */
  pageTitle?: string;
  /** The SDK sets context.timezone itself, over what a call gives (analytics.js: the browser's zone). */
  ownsTimezone?: true;
  /** Makes the calls, in order, as one new visitor; resolves once the service answered them all. */
  send(calls: Call[]): Promise<void>;
}

/** A track call's timestamp, context and integrations, as the Node SDKs and Jitsu's options take them. */
function trackOptions(c: Extract<Call, { type: 'track' }>): Props {
  return { ...(c.timestamp ? { timestamp: new Date(c.timestamp) } : {}), ...(c.context ? { context: c.context } : {}), ...(c.integrations ? { integrations: c.integrations } : {}) };
}

function nodeSegmentClient(baseUrl: string, writeKey: string): Client {
  return {
    name: 'analytics-node',
    lacks: { numericUserId: 'analytics-node refuses a number as userId (ValidationError: userId is not a string)' },
    async send(calls) {
      const analytics = new SegmentAnalytics({ writeKey, host: baseUrl, flushInterval: 10, maxRetries: 2 });
      const delivered = (call: (cb: (err?: unknown) => void) => void) => new Promise<void>((resolve, reject) => call((err) => (err ? reject(err) : resolve())));
      let userId = '';
      for (const c of calls) {
        if (c.type === 'identify') {
          userId = String(c.userId);
          await delivered((cb) => analytics.identify({ userId: c.userId as string, traits: c.traits }, cb));
        } else if (c.type === 'track') await delivered((cb) => analytics.track({ userId, event: c.event, properties: c.properties ?? {}, ...trackOptions(c) }, cb));
        else if (c.type === 'page') await delivered((cb) => analytics.page({ userId, name: c.name, properties: c.properties ?? {} }, cb));
        else if (c.type === 'screen') await delivered((cb) => analytics.screen({ userId, name: c.name, properties: c.properties ?? {} }, cb));
        else await delivered((cb) => analytics.group({ userId, groupId: c.groupId, traits: c.traits ?? {} }, cb));
      }
      await analytics.closeAndFlush();
    },
  };
}

function rudderClient(baseUrl: string, writeKey: string): Client {
  return {
    name: 'rudder-sdk-node',
    lacks: {},
    async send(calls) {
      const client = new RudderAnalytics(writeKey, { dataPlaneUrl: baseUrl, flushAt: 100, flushInterval: 60_000, retryCount: 0, logLevel: 'error' });
      let userId = '';
      for (const c of calls) {
        if (c.type === 'identify') {
          userId = String(c.userId);
          client.identify({ userId: c.userId as string, traits: c.traits });
        } else if (c.type === 'track') client.track({ userId, event: c.event, properties: c.properties ?? {}, ...trackOptions(c) });
        else if (c.type === 'page') client.page({ userId, name: c.name, properties: c.properties ?? {} });
        else if (c.type === 'screen') client.screen({ userId, name: c.name, properties: c.properties ?? {} });
        else client.group({ userId, groupId: c.groupId, traits: c.traits ?? {} });
      }
      await new Promise<void>((resolve, reject) => void client.flush((err?: Error) => (err ? reject(err) : resolve())).catch(reject));
    },
  };
}

function jitsuClient(baseUrl: string, writeKey: string): Client {
  return {
    name: '@jitsu/js',
    lacks: { screen: 'Jitsu has no screen()', backDated: "@jitsu/js stamps every event with the time of the call (its timestamp option is overwritten)" },
    async send(calls) {
      const errors: string[] = [];
      const jitsu = jitsuAnalytics({ host: baseUrl, writeKey: `acme:${writeKey}`, s2s: true, errorPolicy: (message: string) => void errors.push(message) });
      for (const c of calls) {
        if (c.type === 'identify') await jitsu.identify(c.userId as string, c.traits as never);
        else if (c.type === 'track') await jitsu.track(c.event, (c.properties ?? {}) as never, trackOptions(c));
        else if (c.type === 'page') await jitsu.page(c.name, c.properties ?? {});
        else if (c.type === 'group') await jitsu.group(c.groupId, (c.traits ?? {}) as never);
        else throw new Error('Jitsu has no screen()');
      }
      if (errors.length > 0) throw new Error(`@jitsu/js: ${errors.join('; ')}`);
    },
  };
}

/** analytics.js in a page: `window.analytics` (the snippet's) or the one the npm package's load() gave. */
function browserClient(name: string, page: Page): Client {
  return {
    name,
    lacks: {},
    pageTitle: 'Shop',
    ownsTimezone: true,
    async send(calls) {
      const failed = await page.evaluate(async (list: Call[]) => {
        const ajs = (window as unknown as { ajs: Record<string, (...args: unknown[]) => Promise<{ failedDelivery(): unknown }>> }).ajs;
        await ajs.reset!();
        const failures: string[] = [];
        for (const c of list) {
          const ctx =
            c.type === 'identify' ? await ajs.identify!(c.userId, c.traits)
            : c.type === 'track' ? await ajs.track!(c.event, c.properties ?? {}, { ...(c.timestamp ? { timestamp: c.timestamp } : {}), ...(c.context ? { context: c.context } : {}), ...(c.integrations ? { integrations: c.integrations } : {}) })
            : c.type === 'page' ? await ajs.page!(c.name, c.properties ?? {})
            : c.type === 'screen' ? await ajs.screen!(c.name, c.properties ?? {})
            : await ajs.group!(c.groupId, c.traits ?? {});
          if (ctx.failedDelivery()) failures.push(`${c.type}: ${String(ctx.failedDelivery())}`);
        }
        return failures;
      }, calls);
      if (failed.length > 0) throw new Error(`${name}: ${failed.join('; ')}`);
    },
  };
}

const snippet = (cdn: string, writeKey: string) =>
  `!function(){var i="analytics",analytics=window[i]=window[i]||[];if(!analytics.initialize)if(analytics.invoked)window.console&&console.error&&console.error("Segment snippet included twice.");else{analytics.invoked=!0;analytics.methods=["trackSubmit","trackClick","trackLink","trackForm","pageview","identify","reset","group","track","ready","alias","debug","page","screen","once","off","on","addSourceMiddleware","addIntegrationMiddleware","setAnonymousId","addDestinationMiddleware","register"];analytics.factory=function(e){return function(){if(window[i].initialized)return window[i][e].apply(window[i],arguments);var n=Array.prototype.slice.call(arguments);if(["track","screen","alias","group","page","identify"].indexOf(e)>-1){var c=document.querySelector("link[rel='canonical']");n.push({__t:"bpc",c:c&&c.getAttribute("href")||void 0,p:location.pathname,u:location.href,s:location.search,t:document.title,r:document.referrer})}n.unshift(e);analytics.push(n);return analytics}};for(var n=0;n<analytics.methods.length;n++){var key=analytics.methods[n];analytics[key]=analytics.factory(key)}analytics.load=function(key,n){var t=document.createElement("script");t.type="text/javascript";t.async=!0;t.setAttribute("data-global-segment-analytics-key",i);t.src="${cdn}/analytics.js/v1/" + key + "/analytics.min.js";var r=document.getElementsByTagName("script")[0];r.parentNode.insertBefore(t,r);analytics._loadOptions=n};analytics._writeKey="${writeKey}";;analytics.SNIPPET_VERSION="5.2.0";
  analytics.load("${writeKey}");
  }}();`;

/**
 * Two pages on a port of their own: /snippet with Segment's standard snippet pointed at the service, and
 * /npm with the npm package's UMD build and AnalyticsBrowser.load({ writeKey, cdnURL }). Each sets
 * `window.ajs` to the loaded analytics once it is ready.
 */
async function servePages(t: Test, serviceUrl: string, writeKey: string): Promise<string> {
  const umd = readFileSync(join(ROOT, 'node_modules/@segment/analytics-next/dist/umd/index.js'));
  const head = '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title><link rel="icon" href="data:,">';
  const pages: Record<string, string> = {
    '/snippet': `${head}<script>${snippet(serviceUrl, writeKey)}
analytics.ready(() => { window.ajs = window.analytics; });</script></head><body></body></html>`,
    '/npm': `${head}<script src="/umd.js"></script><script>
AnalyticsNext.AnalyticsBrowser.load({ writeKey: ${JSON.stringify(writeKey)}, cdnURL: ${JSON.stringify(serviceUrl)} }).then(([analytics]) => { window.ajs = analytics; });</script></head><body></body></html>`,
  };
  const server = createServer((req, res) => {
    if (req.url === '/umd.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(umd);
    else if (req.url && pages[req.url]) res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(pages[req.url]);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

// --- What landed -----------------------------------------------------------------------------------

interface Stored {
  name: string;
  time: number;
  properties: Props;
  raw: Props;
}

async function storedOf(h: TestApp, where: { email: string } | { clientId: string }): Promise<Stored[]> {
  await h.compacted();
  const [column, value] = 'email' in where ? ['email', where.email] : ['client_id', where.clientId];
  const rows = await h.db('acme').all<{ event_name: string; event_time: Date; raw: string }>(`SELECT event_name, event_time, raw FROM events WHERE ${column} = $1 ORDER BY log_seq`, [value]);
  return rows.map((r) => {
    const raw = JSON.parse(r.raw) as Props;
    return { name: r.event_name, time: r.event_time.getTime(), properties: (raw.properties as Props | undefined) ?? {}, raw };
  });
}

async function contactOf(h: TestApp, email: string): Promise<Props | undefined> {
  await h.compacted();
  const res = await h.admin('GET', `/admin/v1/orgs/acme/contacts?identity=email:${encodeURIComponent(email)}`);
  return res.statusCode === 200 ? (res.json().contact as Props) : undefined;
}

// --- The contracts, one per row --------------------------------------------------------------------

interface Person {
  userId: string;
  email: string;
}
interface Contract {
  /** The start of the row's first cell. */
  row: string;
  needs?: Need[];
  /** Checks the row through `client`, with fresh people (`person(n)`) of its own. */
  check(t: Test, h: TestApp, client: Client, row: TableRow, person: (n?: number) => Person): Promise<void>;
}

const identify = (p: Person, traits: Props = {}): Call => ({ type: 'identify', userId: p.userId, traits: { email: p.email, ...traits } });
/** Properties every spec event of the table can be read from (with the person's `email`, which Signed Up needs). */
const SPEC_PROPERTIES = { product_id: 'p1', sku: 's1', name: 'Shoe', price: 30, products: [{ product_id: 'p1', price: 30 }], order_id: 'o1', revenue: 30, query: 'shoes' };

const CONTRACTS: Contract[] = [
  {
    row: '`userId`',
    needs: ['numericUserId'],
    async check(t, h, client, row, person) {
      const p = person();
      const numeric = Number.parseInt(String(p.userId.length) + '4242', 10);
      await client.send([{ type: 'identify', userId: numeric, traits: { email: p.email } }]);
      t.equal((await contactOf(h, p.email))?.user_id, String(numeric), `${row.audience}: a number is read as text (${row.notes})`);
    },
  },
  {
    row: '`traits.firstName` or `first_name`',
    async check(t, h, client, row) {
      const [camelFirst, snakeFirst, camelLast, snakeLast] = codes(row.segment).map((c) => c.replace(/^traits\./, ''));
      const [people, send] = [[1, 2, 3].map((n) => ({ userId: `${client.name}-names-${n}`.replace(/\W/g, '_'), email: `names${n}.${client.name.replace(/\W/g, '')}@example.com` })), client.send.bind(client)];
      await send([identify(people[0]!, { [camelFirst!]: 'Camel', [camelLast!]: 'Case' })]);
      await send([identify(people[1]!, { [snakeFirst!]: 'Snake', [snakeLast!]: 'Case' })]);
      await send([identify(people[2]!, { [camelFirst!]: 'Camel', [snakeFirst!]: 'Snake' })]);
      t.match(await contactOf(h, people[0]!.email), { first_name: 'Camel', last_name: 'Case' }, `${camelFirst}, ${camelLast} → ${row.audience}`);
      t.match(await contactOf(h, people[1]!.email), { first_name: 'Snake', last_name: 'Case' }, `${snakeFirst}, ${snakeLast} → ${row.audience}`);
      t.match(await contactOf(h, people[2]!.email), { first_name: /camel case wins/.test(row.notes) ? 'Camel' : 'Snake' }, 'both sent: as the notes say');
    },
  },
  {
    row: '`identify` without an e-mail',
    async check(t, h, client, row, person) {
      const p = person();
      // It names nobody: it waits for an identity like any event, and an identify with the e-mail gives it one.
      await client.send([{ type: 'identify', userId: p.userId, traits: { plan: 'pro' } }, identify(p)]);
      const event = (await storedOf(h, { email: p.email })).find((e) => e.name === `custom_${codes(row.audience)[0]}`);
      t.ok(event, `→ ${row.audience}`);
      t.match(event?.properties, { properties: { plan: 'pro' } }, 'its traits in properties.properties');
    },
  },
  {
    row: '`track` with a free name',
    async check(t, h, client, row, person) {
      const p = person();
      const pairs = arrows(row.notes);
      t.ok(pairs.length >= 2, `the row gives examples: ${JSON.stringify(pairs)}`);
      const longest = Number(/at most (\d+) characters/.exec(row.notes)?.[1]);
      const long = 'Completed The Very Long Onboarding Checklist Of Doom';
      await client.send([identify(p), ...pairs.map(([name]): Call => ({ type: 'track', event: name })), { type: 'track', event: long }]);
      const names = (await storedOf(h, { email: p.email })).map((e) => e.name);
      for (const [name, mapped] of pairs) t.ok(names.includes(mapped), `${name} → ${mapped}`);
      const cut = names.find((n) => n.startsWith('custom_completed_the_very'));
      t.equal(cut?.slice('custom_'.length).length, longest, `a long name is cut to ${longest} characters in snake case (${cut})`);
    },
  },
  {
    row: '`Product Viewed`',
    async check(t, h, client, row, person) {
      const p = person();
      const names = codes(row.segment);
      const types = codes(row.audience);
      t.equal(names.length, types.length, 'the row pairs each spec event with a type');
      await client.send([identify(p), ...names.map((event): Call => ({ type: 'track', event, properties: { ...SPEC_PROPERTIES, email: p.email } }))]);
      const stored = await storedOf(h, { email: p.email });
      names.forEach((name, i) => t.ok(stored.some((e) => e.name === types[i]), `${name} → ${types[i]}`));
      for (const [from, to] of arrows(row.notes)) {
        if (/^[a-zA-Z]+$/.test(to)) t.ok(stored.some((e) => e.properties[to] !== undefined), `${from} → ${to} in some spec event's properties`);
      }
      const signedIn = stored.find((e) => e.name === types[names.indexOf('Signed In')]);
      t.equal(signedIn?.properties.userId, p.userId, "Signed In's user id: the message's userId");
    },
  },
  {
    row: '`page`',
    async check(t, h, client, row, person) {
      const p = person();
      await client.send([identify(p), { type: 'page', name: 'Pricing', properties: { url: 'https://shop.test/pricing' } }]);
      const page = (await storedOf(h, { email: p.email })).find((e) => e.name === codes(row.audience)[0]);
      t.ok(page, `page → ${row.audience}`);
      const [from, to] = arrows(row.notes)[0] ?? [];
      const title = page?.properties[to!.replace(/^properties\./, '')];
      if (client.pageTitle === undefined) t.equal(title, 'Pricing', `${from} → ${to}`);
      else {
        t.ok(/unless the SDK sent a title of its own/.test(row.notes), 'the row says a title the SDK sends stays');
        t.same([title, page?.properties.name], [client.pageTitle, 'Pricing'], `the SDK's own title stays, and properties.name keeps the name`);
      }
    },
  },
  {
    row: '`screen`, `group`',
    needs: ['screen', 'group'],
    async check(t, h, client, row, person) {
      const p = person();
      const [screen, group] = codes(row.audience);
      await client.send([identify(p), { type: 'screen', name: 'Home', properties: { from: 'push' } }, { type: 'group', groupId: 'g-1', traits: { plan: 'team' } }]);
      const stored = await storedOf(h, { email: p.email });
      t.match(stored.find((e) => e.name === `custom_${screen}`)?.properties, { properties: { name: 'Home', from: 'push' } }, `screen → custom ${screen}, its name in the properties`);
      t.match(stored.find((e) => e.name === `custom_${group}`)?.properties, { properties: { groupId: 'g-1', traits: { plan: 'team' } } }, `group → custom ${group}, groupId and traits in the properties`);
    },
  },
  {
    row: '`context` (message, else batch)',
    async check(t, h, client, row, person) {
      const p = person();
      const [[from, to]] = arrows(row.notes) as [[string, string]];
      const ip = '203.0.113.9';
      await client.send([identify(p), { type: 'track', event: 'Context Kept', context: { ip, timezone: 'Asia/Tokyo', campaign: { name: 'spring' } } }]);
      const event = (await storedOf(h, { email: p.email })).find((e) => e.name === 'custom_context_kept');
      t.match(event?.raw.context, { campaign: { name: 'spring' } }, 'context kept whole: a member of its own');
      t.equal(event?.raw[to], ip, `${from} → ${to}`);
      const zone = (event?.raw.context as Props | undefined)?.timezone as string | undefined;
      t.ok(zone === 'Asia/Tokyo' || client.ownsTimezone, `the zone sent: ${zone}`);
      t.equal((await contactOf(h, p.email))?.timezone, zone, "context.timezone: the profile's time zone");
    },
  },
  {
    row: '`integrations`, `writeKey` in a message',
    async check(t, h, client, row, person) {
      const p = person();
      await client.send([identify(p), { type: 'track', event: 'Integrations Sent', integrations: { All: false, Mixpanel: true } }]);
      const event = (await storedOf(h, { email: p.email })).find((e) => e.name === 'custom_integrations_sent');
      t.ok(event, 'stored');
      for (const member of codes(row.segment)) t.notOk(member in (event?.raw ?? {}), `${member} ${row.notes}`);
      t.notMatch(JSON.stringify(event?.raw), /Mixpanel/, 'nowhere in the event');
    },
  },
  {
    row: '`timestamp`, else `originalTimestamp`',
    needs: ['backDated'],
    async check(t, h, client, row, person) {
      const p = person();
      const past = new Date(Date.now() - 3 * 86_400_000).toISOString();
      await client.send([identify(p), { type: 'track', event: 'Old Order', timestamp: past }]);
      const old = (await storedOf(h, { email: p.email })).find((e) => e.name === 'custom_old_order');
      // The service corrects the client's clock (SPEC 4.4): sentAt and receipt are within seconds here.
      t.ok(old && Math.abs(old.time - Date.parse(past)) < 60_000, `a back-dated ${codes(row.segment)[0]} is the event's time (${old && new Date(old.time).toISOString()} for ${past})`);
    },
  },
];

// --- The run ---------------------------------------------------------------------------------------

t.test('every row of the mapping table has a contract or a test elsewhere, and nothing else', async (t) => {
  const rows = mappingTable();
  t.ok(rows.length >= 15, `${rows.length} rows read`);
  const owner = (row: TableRow) => [...CONTRACTS.map((c) => c.row), ...Object.keys(ELSEWHERE)].filter((start) => row.segment.startsWith(start));
  for (const row of rows) t.equal(owner(row).length, 1, `checked once: ${row.segment.slice(0, 60)}`);
  for (const start of [...CONTRACTS.map((c) => c.row), ...Object.keys(ELSEWHERE)]) t.ok(rows.some((r) => r.segment.startsWith(start)), `its row is in the table: ${start}`);
});

t.test('each row, through each SDK', async (t) => {
  const rows = mappingTable();
  const h = await startTestApp(t);
  const serviceUrl = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const { writeKey } = (await h.createOrg('acme')).production;
  const browser = await launchChromium(t);
  const pagesUrl = await servePages(t, serviceUrl, writeKey);
  const pages: Client[] = [];
  const problems: string[][] = [];
  for (const [name, path] of [['analytics.js (snippet)', '/snippet'], ['analytics.js (npm)', '/npm']] as const) {
    const page = await browser.newPage();
    problems.push(watchPage(page, serviceUrl).problems);
    await page.goto(`${pagesUrl}${path}`);
    await page.waitForFunction(() => (window as unknown as { ajs?: unknown }).ajs !== undefined);
    pages.push(browserClient(name, page));
  }
  const clients = [nodeSegmentClient(serviceUrl, writeKey), rudderClient(serviceUrl, writeKey), jitsuClient(serviceUrl, writeKey), ...pages];

  for (const contract of CONTRACTS) {
    const row = rows.find((r) => r.segment.startsWith(contract.row));
    if (!row) throw new Error(`no row ${contract.row}`);
    await t.test(row.segment.slice(0, 70), async (t) => {
      for (const client of clients) {
        const lacking = (contract.needs ?? []).map((need) => client.lacks[need]).filter(Boolean);
        if (lacking.length > 0) {
          t.comment(`${client.name}: not this row (${lacking.join('; ')})`);
          continue;
        }
        let n = 0;
        const slug = `${client.name}-${contract.row}`.replace(/[^a-z0-9]+/gi, '_').toLowerCase();
        const person = () => ({ userId: `${slug}_${++n}`, email: `${slug}.${n}@example.com` });
        await t.test(client.name, (t) => contract.check(t, h, client, row, person));
      }
    });
  }
  t.same(problems.flat(), [], 'no script error in either page');
});
