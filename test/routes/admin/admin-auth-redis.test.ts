/**
 * With REDIS_URL, an address's failed admin keys are one budget across every API process (the `auth`
 * limiter's Redis keys), and concurrent guesses over both processes still get exactly the burst looked
 * at: each request's answer is one atomic step in Redis.
 */
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_AUTH_POLICY } from '../../../src/ratelimit/policies.js';
import { ADMIN_KEY, type TestApp } from '../../helpers/app.js';
import { redisUrl, redisUrlIfReachable, uniquePrefix } from '../../helpers/redis-server.js';
import { API_ONLY, startRoleApp } from '../../helpers/role-app.js';

const BURST = ADMIN_AUTH_POLICY.burst;

const call = (h: TestApp, remoteAddress: string, key: string) =>
  h.app.inject({ url: '/admin/v1/orgs', remoteAddress, headers: { authorization: `Bearer ${key}` } });

const url = await redisUrlIfReachable();
if (!url) t.comment(`skipped: Redis not reachable at ${redisUrl()}`);
t.test('two API processes: one failure budget per address, and a valid key elsewhere unaffected', { skip: url ? false : `Redis not reachable at ${redisUrl()}` }, async (t) => {
  const config = { redisUrl: url!, redisKeyPrefix: uniquePrefix() };
  const apps: TestApp[] = [];
  t.teardown(() => Promise.all(apps.map((a) => a.close())));
  const root = t.testdir();
  const [a, b] = [await startRoleApp(t, API_ONLY, { dataDir: join(root, 'a'), config }), await startRoleApp(t, API_ONLY, { dataDir: join(root, 'b'), config })];
  apps.push(a!, b!);

  const started = performance.now();
  const first = [];
  for (let i = 0; i < BURST; i++) first.push((await call(i % 2 ? a! : b!, '203.0.113.7', `guess-${i}`)).statusCode);
  t.same(first, Array(BURST).fill(401), `${BURST} failures over both processes`);
  const refilled = Math.floor((performance.now() - started) / 1000);
  const next = await call(b!, '203.0.113.7', ADMIN_KEY);
  if (refilled === 0) t.equal(next.statusCode, 429, 'the other process refuses that address, even with the right key');
  t.equal((await call(b!, '198.51.100.20', ADMIN_KEY)).statusCode, 200, 'the valid key from another address works');

  // 60 guesses at once, over both processes, from a fresh address.
  const burstStart = performance.now();
  const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => call(i % 2 ? a! : b!, '203.0.113.99', `guess-${i}`)));
  const refill = Math.floor((performance.now() - burstStart) / 1000);
  const looked = answers.filter((r) => r.statusCode === 401).length;
  t.ok(looked >= BURST && looked <= BURST + refill, `${looked} of 60 concurrent guesses looked at (the burst ${BURST}, + ${refill} refilled meanwhile)`);
  t.same(new Set(answers.map((r) => r.statusCode)), new Set([401, 429]), 'the rest refused');
});
