/** Config is read once from the environment; a bad value names its variable. */
import t from 'tap';
import { ConfigError, readConfig } from '../src/config.js';

t.test('defaults', async (t) => {
  const c = readConfig({});
  t.match(c, { port: 8080, host: '127.0.0.1', dataDir: './data', queriesDir: './queries', logLevel: 'info', webhookAllowPrivate: false });
  t.same(c.roles, ['collector', 'compactor', 'api', 'flows']);
  t.notOk(c.natsUrl);
  t.match(c, { natsPublishTimeoutMs: 5000, httpHeadersTimeoutMs: 10000, httpRequestTimeoutMs: 30000, httpKeepAliveTimeoutMs: 72000 });
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
  ];
  for (const [env, message] of cases) {
    t.throws(() => readConfig(env), { name: 'ConfigError', message }, JSON.stringify(env));
  }
  t.ok(new ConfigError('x') instanceof Error);
});
