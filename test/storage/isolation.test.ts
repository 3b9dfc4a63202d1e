/**
 * Tenant isolation by construction (the per-org storage issue): the runner is built WITHOUT the SQL
 * guard — hostile SQL goes straight to an untrusted connection of org A's database, as if every check had
 * been missed — and no row of org B, no credential hash and no token hash ever comes back, because org
 * A's database holds nothing else and its instance can reach no other file. An error is a fine answer.
 */
import { join } from 'node:path';
import t from 'tap';
import type { OrgDocument, TokensDocument } from '../../src/control/documents.js';
import { orgKey, tokensKey } from '../../src/control/types.js';
import { customEvent, startTestApp, STORAGE_PROCESS } from '../helpers/app.js';
import { rowsOf } from '../../src/db/sql.js';

t.test('with the guard switched off, org A reaches no row of org B and no secret hash', async (t) => {
  const h = await startTestApp(t, { config: STORAGE_PROCESS });
  const acme = await h.createOrg('acme');
  const beta = await h.createOrg('beta');
  for (const org of ['acme', 'beta']) t.equal((await h.admin('POST', `/admin/v1/orgs/${org}/tokens`, { createdBy: 'ops@example.com' })).statusCode, 201);
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'acme-event' }))).statusCode, 200);
  t.equal((await h.collect(customEvent(beta.production, { messageId: 'beta-secret-event', traits: { email: 'beta-secret@example.com' } }))).statusCode, 200);
  t.equal((await h.collect(customEvent(beta.staging, { messageId: 'beta-staging-event', traits: { email: 'beta-staging@example.com' } }))).statusCode, 200);
  await h.compacted();
  const trigger = "SELECT identity, identity_type, ts, event_type, event_id, event_raw FROM event_triggers WHERE event_id <> 'beta-trigger-marker' AND ts > {cursor_start_time} AND ts <= {cursor_end_time}";
  t.equal((await h.admin('PUT', '/admin/v1/orgs/beta/triggers/beta_only', { sql: trigger })).statusCode, 200);
  const { control } = h.app;
  const hashes: string[] = [];
  for (const org of ['acme', 'beta']) {
    const stored = (await control.get(orgKey(org)))!.value as OrgDocument;
    hashes.push(stored.credentials.staging.secretHash, stored.credentials.production.secretHash);
    hashes.push(...((await control.get(tokensKey(org)))!.value as TokensDocument).tokens.map((tok) => tok.hash));
  }
  t.equal(hashes.length, 6);
  const markers = ['beta-secret', 'beta-staging', 'beta-trigger-marker', beta.production.partnerId, beta.staging.partnerId, ...hashes];

  const dataDir = h.dataDir;
  const files = [join(dataDir, 'orgs', 'beta.duckdb'), join(dataDir, 'control.duckdb'), join(dataDir, 'log', '00000000000000000001.log')];
  const internal = ['events', 'pending_identity', 'identify_mappings', 'quarantine', 'contacts', 'contact_activity', 'trigger_versions', 'flows', 'flow_sends', 'flow_decisions', 'orgs', 'partner_credentials', 'audience_tokens', 'control_documents'];
  const escapes = [
    ...internal.map((table) => `WITH ${table} AS (SELECT * FROM ${table}) SELECT * FROM ${table}`),
    ...internal.map((table) => `SELECT * FROM beta.main.${table}`),
    ...internal.map((table) => `SELECT * FROM control.main.${table}`),
    'SELECT * FROM beta.event_triggers',
    'SELECT * FROM beta.profiles',
    'SELECT * FROM (SHOW ALL TABLES)',
    'SELECT * FROM (SHOW DATABASES)',
    'SELECT * FROM (DESCRIBE events)',
    'SELECT * FROM (SUMMARIZE events)',
    'SELECT * FROM (SUMMARIZE trigger_versions)',
    'SELECT * FROM information_schema.tables',
    'SELECT * FROM information_schema.schemata',
    'SELECT * FROM duckdb_tables()',
    'SELECT * FROM duckdb_databases()',
    'SELECT * FROM duckdb_views()',
    'SELECT * FROM duckdb_settings()',
    ...files.flatMap((file) => [
      `SELECT * FROM '${file}'`,
      `SELECT * FROM read_blob('${file}')`,
      `SELECT * FROM read_text('${file}')`,
      `ATTACH '${file}' AS stolen (READ_ONLY)`,
    ]),
    'SELECT * FROM stolen.main.events',
    'SELECT * FROM stolen.main.partner_credentials',
    "SELECT * FROM query_table('events')",
    "SELECT * FROM glob('" + join(dataDir, '**') + "')",
    "SET enable_external_access = true",
  ];
  let answered = 0;
  for (const sql of escapes) {
    const answer = await h
      .db('acme')
      .untrusted(5000, async (c) => JSON.stringify(rowsOf(await c.read(sql, [], 100_000)), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)))
      .catch((error: Error) => `error: ${error.message.split('\n')[0]}`);
    if (!answer.startsWith('error:')) answered++;
    const leaked = markers.filter((marker) => answer.includes(marker));
    t.same(leaked, [], `${sql}: ${answer.slice(0, 120)}`);
  }
  t.ok(answered > 10, `${answered} of ${escapes.length} escapes ran at all (and found nothing)`);
  // The org's own data is there: the corpus is not vacuous.
  const own = await h.db('acme').untrusted(5000, async (c) => rowsOf(await c.read('SELECT message_id FROM events', [], 10)));
  t.same(own, [{ message_id: 'acme-event' }]);
});
