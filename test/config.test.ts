/** Config is read once from the environment; a bad value names its variable. */
import t from 'tap';
import { ConfigError, readConfig } from '../src/config.js';

t.test('defaults', async (t) => {
  const c = readConfig({});
  t.match(c, { port: 8080, host: '127.0.0.1', dataDir: './data', queriesDir: './queries', logLevel: 'info', webhookAllowPrivate: false });
  t.same(c.roles, ['collector', 'compactor', 'api', 'flows']);
  t.notOk(c.natsUrl);
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
  ];
  for (const [env, message] of cases) {
    t.throws(() => readConfig(env), { name: 'ConfigError', message }, JSON.stringify(env));
  }
  t.ok(new ConfigError('x') instanceof Error);
});
