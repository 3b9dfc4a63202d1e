/** Config is read once from the environment; a bad value names its variable. */
import t from 'tap';
import { ConfigError, readConfig } from '../../src/core/config.js';

t.test('defaults', async (t) => {
  const c = readConfig({});
  t.match(c, { port: 8080, host: '127.0.0.1', dataDir: './data', queriesDir: './queries', logLevel: 'info', webhookAllowPrivate: false });
  t.same(c.roles, ['collector', 'compactor', 'api', 'flows']);
  t.notOk(c.natsUrl);
  t.notOk(c.redisUrl, 'no REDIS_URL: rate limits per process');
  t.equal(c.redisKeyPrefix, 'audience');
  t.match(c, { natsPublishTimeoutMs: 5000, httpHeadersTimeoutMs: 10000, httpRequestTimeoutMs: 30000, httpKeepAliveTimeoutMs: 72000 });
});

t.test('SHARD and NATS_STREAM_REPLICAS', async (t) => {
  t.same(readConfig({}).shard, { index: 0, count: 1 }, 'every org by default');
  t.same(readConfig({ SHARD: '1/3', NATS_URL: 'nats://127.0.0.1:4222' }).shard, { index: 1, count: 3 });
  t.equal(readConfig({ NATS_STREAM_REPLICAS: '3' }).natsStreamReplicas, 3);
});

t.test('TRUST_PROXY, METRICS_PORT and SHUTDOWN_TIMEOUT_MS', async (t) => {
  t.equal(readConfig({}).trustProxy, false, 'no proxy trusted by default');
  t.equal(readConfig({ TRUST_PROXY: 'false' }).trustProxy, false);
  t.equal(readConfig({ TRUST_PROXY: 'true' }).trustProxy, true);
  t.same(readConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.7,::1,fd00::/8' }).trustProxy, ['10.0.0.0/8', '192.168.1.7', '::1', 'fd00::/8']);
  t.notOk(readConfig({}).metricsPort, '/metrics on PORT by default');
  t.equal(readConfig({ METRICS_PORT: '9464' }).metricsPort, 9464);
  t.equal(readConfig({}).shutdownTimeoutMs, 25_000);
  t.equal(readConfig({ SHUTDOWN_TIMEOUT_MS: '5000' }).shutdownTimeoutMs, 5000);
});

t.test('a bad value stops start-up naming the variable', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'eighty' }, /^PORT/],
    [{ PORT: '70000' }, /^PORT/],
    [{ NATS_URL: 'http://x' }, /^NATS_URL/],
    [{ ROLES: 'collector,chef' }, /^ROLES/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL/],
    [{ WEBHOOK_ALLOW_PRIVATE: 'yes' }, /^WEBHOOK_ALLOW_PRIVATE/],
    [{ ADMIN_KEY: 'short' }, /^ADMIN_KEY/],
    [{ NATS_PUBLISH_TIMEOUT_MS: '0' }, /^NATS_PUBLISH_TIMEOUT_MS/],
    [{ HTTP_REQUEST_TIMEOUT_MS: 'soon' }, /^HTTP_REQUEST_TIMEOUT_MS/],
    [{ HTTP_KEEP_ALIVE_TIMEOUT_MS: '0' }, /^HTTP_KEEP_ALIVE_TIMEOUT_MS/],
    [{ HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' }, /^HTTP_HEADERS_TIMEOUT_MS is invalid: must be at most HTTP_REQUEST_TIMEOUT_MS/],
    [{ REDIS_URL: 'localhost:6379' }, /^REDIS_URL is invalid/],
    [{ REDIS_URL: 'http://127.0.0.1:6379' }, /^REDIS_URL is invalid/],
    [{ REDIS_URL: 'redis://[::1' }, /^REDIS_URL is invalid/],
    [{ REDIS_URL: 'redis://127.0.0.1:99999' }, /^REDIS_URL is invalid: not a URL/],
    [{ REDIS_KEY_PREFIX: 'has space' }, /^REDIS_KEY_PREFIX is invalid/],
    [{ TRUST_PROXY: '1' }, /^TRUST_PROXY is invalid: "1" .*hop counts are not supported/],
    [{ TRUST_PROXY: 'yes' }, /^TRUST_PROXY is invalid/],
    [{ TRUST_PROXY: '10.0.0.0/33' }, /^TRUST_PROXY is invalid/],
    [{ TRUST_PROXY: '10.0.0.1,,10.0.0.2' }, /^TRUST_PROXY is invalid/],
    [{ TRUST_PROXY: 'lb.example.com' }, /^TRUST_PROXY is invalid/],
    [{ METRICS_PORT: '70000' }, /^METRICS_PORT is invalid/],
    [{ METRICS_PORT: 'nine' }, /^METRICS_PORT/],
    [{ METRICS_PORT: '8080' }, /^METRICS_PORT is invalid: must differ from PORT/],
    [{ SHUTDOWN_TIMEOUT_MS: '10' }, /^SHUTDOWN_TIMEOUT_MS is invalid/],
    [{ SHARD: '2/2', NATS_URL: 'nats://127.0.0.1:4222' }, /^SHARD must be <i>\/<n>/],
    [{ SHARD: 'one', NATS_URL: 'nats://127.0.0.1:4222' }, /^SHARD must be <i>\/<n>/],
    [{ SHARD: '0/2' }, /^SHARD is invalid: .*set NATS_URL/],
    [{ NATS_STREAM_REPLICAS: '7' }, /^NATS_STREAM_REPLICAS/],
    // 367 characters: with the longest unsubscribe link a List-Unsubscribe line would pass RFC 5322's 998.
    [{ PUBLIC_URL: `https://a.example/${'p'.repeat(349)}` }, /^PUBLIC_URL is invalid: must NOT have more than 366 characters/],
  ];
  for (const [env, message] of cases) {
    t.throws(() => readConfig(env), { name: 'ConfigError', message }, JSON.stringify(env));
  }
  t.ok(new ConfigError('x') instanceof Error);
});

t.test('REDIS_URL: redis:// or rediss://, with credentials and a database number', async (t) => {
  for (const url of ['redis://127.0.0.1:6379', 'rediss://user:secret@cache.internal:6380/2']) t.equal(readConfig({ REDIS_URL: url }).redisUrl, url);
  t.equal(readConfig({ REDIS_URL: '' }).redisUrl, undefined, 'empty is unset');
  t.equal(readConfig({ REDIS_KEY_PREFIX: 'audience-eu:prod' }).redisKeyPrefix, 'audience-eu:prod');
});
