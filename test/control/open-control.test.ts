/**
 * A DATA_DIR that ran before the control plane moved to KV: started in NATS mode, its control.duckdb
 * moves into the bucket once (orgs, credentials, tokens keep working) and the file is set aside.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { customEvent, startTestApp } from '../helpers/app.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';

if (!hasNatsServerBinary()) {
  t.test('control plane import', { skip: 'nats-server binary not installed' }, () => {});
} else {
  t.test('an embedded control.duckdb moves into the KV bucket at the first NATS-mode start', async (t) => {
    const dataDir = t.testdir();
    const embedded = await startTestApp(t, { dataDir });
    const cred = await embedded.createOrg('acme', { audienceApi: true });
    const issued = (await embedded.admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@acme.com' })).json() as { token: string };
    await embedded.close();

    const nats = await startNatsServer(t);
    const h = await startTestApp(t, { dataDir, natsUrl: nats.url });
    t.equal(h.app.control.kind, 'kv');
    t.ok(h.app.orgs.cached('acme'), 'the org is in the bucket');
    t.ok(h.app.tokens.authenticate(issued.token, Date.now()).ok, 'its token authenticates');
    t.equal((await h.collect(customEvent(cred.production))).statusCode, 200, 'its partner secret collects');
    t.notOk(existsSync(join(dataDir, 'control.duckdb')), 'the file is set aside');
    t.ok(existsSync(join(dataDir, 'control.duckdb.imported')), 'and kept');
    // Closed here: tap's teardowns run in the order they were registered, so the nats-server (and the
    // testdir, asked for before the first app) would go before this app stops writing and publishing.
    await h.close();
  });
}
