/**
 * NATS credentials, TLS and stream limits against a real nats-server that demands a user and password
 * over TLS: the service connects with NATS_USER, NATS_PASSWORD and NATS_TLS_CA and takes an event; a
 * wrong password or an unknown CA stops the start with the variable to check; the stream carries
 * NATS_STREAM_MAX_AGE and NATS_STREAM_MAX_BYTES, updated at the next start.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { readConfig } from '../../src/core/config.js';
import { appsDir, customEvent, startTestApp } from '../helpers/app.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';

/** A CA and a server certificate for 127.0.0.1, made with openssl in `dir`. */
function certificates(dir: string): { ca: string; cert: string; key: string; otherCa: string } {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  for (const name of ['ca', 'other-ca']) {
    run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.pem`);
  }
  run('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', 'server.key', '-out', 'server.csr');
  execFileSync('sh', ['-c', "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost' > san.ext"], { cwd: dir });
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'san.ext', '-out', 'server.pem');
  return { ca: join(dir, 'ca.pem'), cert: join(dir, 'server.pem'), key: join(dir, 'server.key'), otherCa: join(dir, 'other-ca.pem') };
}

(hasNatsServerBinary() ? t.test : t.skip)('user and password over TLS, and the stream limits', async (t) => {
  const dir = appsDir(t);
  const pem = certificates(dir);
  const nats = await startNatsServer(t, {
    extraConfig: [
      `tls { cert_file: ${JSON.stringify(pem.cert)}, key_file: ${JSON.stringify(pem.key)} }`,
      'authorization { users = [ { user: audience, password: "s3cret-pass" } ] }',
    ],
  });
  const env = { NATS_URL: nats.url, NATS_USER: 'audience', NATS_PASSWORD: 's3cret-pass', NATS_TLS_CA: pem.ca, NATS_STREAM_MAX_AGE: '3d', NATS_STREAM_MAX_BYTES: '1GB' };
  const base = { ...readConfig(env), dataDir: join(dir, 'data') };

  const h = await startTestApp(t, { natsUrl: nats.url, dataDir: join(dir, 'data'), config: base });
  const cred = await h.createOrg('acme');
  t.equal((await h.collect(customEvent(cred.production))).statusCode, 200, 'an event acknowledged over TLS, authenticated');
  await h.close();

  const nc = await connect({ servers: nats.url, user: 'audience', pass: 's3cret-pass', tls: { caFile: pem.ca } });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const stream = async () => (await jsm.streams.info('AUDIENCE_EVENTS')).config;
  t.equal((await stream()).max_age, 3 * 86_400 * 1e9, 'max_age from NATS_STREAM_MAX_AGE');
  t.equal((await stream()).max_bytes, 1024 ** 3, 'max_bytes from NATS_STREAM_MAX_BYTES');

  const again = await startTestApp(t, { natsUrl: nats.url, dataDir: join(dir, 'data'), config: { ...base, ...readConfig({ ...env, NATS_STREAM_MAX_AGE: '12h', NATS_STREAM_MAX_BYTES: '-1' }), dataDir: join(dir, 'data') } });
  t.equal((await stream()).max_age, 12 * 3_600 * 1e9, 'changed limits are applied at the next start');
  t.equal((await stream()).max_bytes, -1);
  await again.close();

  await t.rejects(startTestApp(t, { natsUrl: nats.url, dataDir: join(dir, 'bad-pass'), config: { ...base, natsPassword: 'wrong', dataDir: join(dir, 'bad-pass') } }), 'a wrong password stops the start');
  await t.rejects(startTestApp(t, { natsUrl: nats.url, dataDir: join(dir, 'bad-ca'), config: { ...base, natsTlsCa: pem.otherCa, dataDir: join(dir, 'bad-ca') } }), 'a server certificate from another CA stops the start');
});

t.test('NATS security and limits: bad values stop the start naming the variable', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ NATS_CREDS: '/no/such/file.creds' }, /^NATS_CREDS is invalid: cannot read the file/],
    [{ NATS_TLS_CA: '/no/such/ca.pem' }, /^NATS_TLS_CA is invalid/],
    [{ NATS_TLS_CERT: '/etc/hostname' }, /^NATS_TLS_CERT is invalid: a client certificate needs its key/],
    [{ NATS_PASSWORD: 'x' }, /^NATS_PASSWORD is invalid: set NATS_USER too/],
    [{ NATS_STREAM_MAX_AGE: '7 days' }, /^NATS_STREAM_MAX_AGE is invalid/],
    [{ NATS_STREAM_MAX_AGE: '-1d' }, /^NATS_STREAM_MAX_AGE is invalid/],
    [{ NATS_STREAM_MAX_BYTES: '10 GB' }, /^NATS_STREAM_MAX_BYTES is invalid/],
    [{ NATS_STREAM_MAX_BYTES: '1.5GB' }, /^NATS_STREAM_MAX_BYTES is invalid/],
  ];
  for (const [env, message] of cases) t.throws(() => readConfig(env), { message }, JSON.stringify(env));
  t.equal(readConfig({}).natsStreamMaxAgeMs, 7 * 86_400_000, 'events stay 7 days in the stream by default');
  t.equal(readConfig({}).natsStreamMaxBytes, -1, 'no size limit by default');
  t.equal(readConfig({ NATS_STREAM_MAX_AGE: '0' }).natsStreamMaxAgeMs, 0);
  t.equal(readConfig({ NATS_STREAM_MAX_BYTES: '50GB' }).natsStreamMaxBytes, 50 * 1024 ** 3);
});
