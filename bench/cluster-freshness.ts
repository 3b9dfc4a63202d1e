/**
 * Event → profile freshness across processes, against a running `npm run cluster`: identify events go
 * to collector-1, the profiles are read from api-2, so each sample crosses the stream, the owning shard
 * (compaction, refresh), the profile feed (KV) and the other process's index. Same method as the
 * single-process freshness (freshness.ts). Run: `npm run cluster` in one terminal, then
 * `npx tsx bench/cluster-freshness.ts` in another; writes bench/results/cluster-freshness.json.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contactsCsv, syntheticContacts } from './contacts.js';
import { measureFreshness } from './freshness.js';

const dir = process.env.CLUSTER_DIR || 'cluster-data';
const base = Number(process.env.CLUSTER_BASE_PORT || 8081);
const collector = `http://127.0.0.1:${base}`;
const api1 = `http://127.0.0.1:${base + 2}`;
const api2 = `http://127.0.0.1:${base + 3}`;
const key = readFileSync(join(dir, 'admin.key'), 'utf8').trim();
const slug = `fresh_${Date.now().toString(36)}`;

async function admin(method: string, path: string, body?: string, type = 'application/json'): Promise<any> {
  const res = await fetch(`${api1}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': type } : {}) }, ...(body ? { body } : {}) });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

const contacts = syntheticContacts(2000);
const org = await admin('POST', '/admin/v1/orgs', JSON.stringify({ slug, name: slug, audienceApi: true, rateLimit: 1000 }));
await admin('POST', `/admin/v1/orgs/${slug}/contacts/import`, contactsCsv(contacts, 0, contacts.length), 'text/csv');
const { token } = await admin('POST', `/admin/v1/orgs/${slug}/tokens`, JSON.stringify({ createdBy: 'bench@example.com' }));
// The imported profiles reach api-2 through the feed; wait for the last one.
const last = contacts[contacts.length - 1]!.email;
for (let i = 0; i < 200; i++) {
  const res = await fetch(`${api2}/audience/v2/contacts?identity=email:${encodeURIComponent(last)}`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
  if (res.status === 200) break;
  await new Promise((r) => setTimeout(r, 50));
}
const result = await measureFreshness({
  url: collector,
  apiUrl: api2,
  token,
  credentials: org.credentials.production,
  contacts,
  events: 300,
  perSecond: 20,
  pollMs: 10,
  timeoutMs: 5000,
  tag: slug,
});
console.log(`cross-process freshness (collector-1 → shard → feed → api-2): p50 ${result.p50} ms, p90 ${result.p90} ms, p99 ${result.p99} ms, max ${result.max} ms (n ${result.n}, missing ${result.missing}, failed ${result.failed})`);
writeFileSync(join('bench', 'results', 'cluster-freshness.json'), JSON.stringify({ at: new Date().toISOString(), org: slug, ...result }, null, 2) + '\n');
