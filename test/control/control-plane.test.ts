/**
 * The control plane apart from the orgs' data (tenant isolation by construction): with the SQL guard
 * switched off — hostile SQL run straight on an untrusted connection, as if a check had been missed —
 * no partner-secret or token hash is reachable, because those live in another DuckDB file that is never
 * attached where untrusted SQL runs.
 */
import t from 'tap';
import { join } from 'node:path';
import { bindOrgRelations, unbindOrgRelations } from '../../src/triggers/org-relations.js';
import { customEvent, startTestApp } from '../helpers/app.js';

t.test('with the guard switched off, untrusted SQL finds no credential or token hash', async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  await h.createOrg('beta');
  for (const org of ['acme', 'beta']) t.equal((await h.admin('POST', `/admin/v1/orgs/${org}/tokens`, { createdBy: 'ops@example.com' })).statusCode, 201);
  t.equal((await h.collect(customEvent(acme.production))).statusCode, 200);
  await h.compacted();
  const { control, db } = h.app.audience;
  const secrets = [
    ...(await control.all<{ v: string }>('SELECT secret_hash AS v FROM partner_credentials')),
    ...(await control.all<{ v: string }>('SELECT token_hash AS v FROM audience_tokens')),
  ].map((r) => r.v);
  t.equal(secrets.length, 6);

  const controlFile = join(h.dataDir, 'control.duckdb');
  const escapes = [
    'SELECT * FROM partner_credentials',
    'SELECT * FROM audience_tokens',
    'SELECT * FROM orgs',
    'WITH partner_credentials AS (SELECT * FROM partner_credentials) SELECT * FROM partner_credentials',
    'SELECT * FROM (SHOW ALL TABLES)',
    'SELECT * FROM duckdb_tables()',
    'SELECT * FROM duckdb_databases()',
    'SELECT * FROM information_schema.tables',
    `SELECT * FROM '${controlFile}'`,
    `SELECT * FROM read_blob('${controlFile}')`,
    `ATTACH '${controlFile}' AS stolen (READ_ONLY)`,
    'SELECT * FROM stolen.partner_credentials',
    'SELECT * FROM control.main.partner_credentials',
    "SELECT * FROM query_table('partner_credentials')",
  ];
  const answers: string[] = [];
  for (const sql of escapes) {
    const answer = await db
      .untrusted(5000, async (c) => {
        await bindOrgRelations(c, 'acme');
        try {
          return JSON.stringify((await c.read(sql, [], 10_000)).rows, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
        } finally {
          await unbindOrgRelations(c);
        }
      })
      .catch((error: Error) => `error: ${error.message.split('\n')[0]}`);
    answers.push(answer);
    for (const secret of secrets) t.notOk(answer.includes(secret), `${sql}: no hash`);
    if (!answer.startsWith('error:')) t.notMatch(answer, /"(partner_credentials|audience_tokens|orgs)"/, `${sql}: no control-plane table listed`);
  }
  t.match(answers[0], /^error: .*partner_credentials/, 'the table is simply not there');
});
