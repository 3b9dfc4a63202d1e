/**
 * TRUST_PROXY decides whose address the failed-auth limiter counts: behind a trusted balancer the
 * client's (from X-Forwarded-For), otherwise the peer's, whatever X-Forwarded-For claims. And an
 * incoming Request-Id is kept when plausible, replaced when not.
 */
import t from 'tap';
import type { TestApp } from '../helpers/app.js';
import { ManualClock } from '../../src/core/context.js';
import { API_ONLY, startRoleApp } from '../helpers/role-app.js';

const BALANCER = '10.1.2.3';
const AUTH_FAILURE_BURST = 10;

async function lookup(h: TestApp, peer: string, forwardedFor?: string) {
  const res = await h.app.inject({
    method: 'GET',
    url: '/audience/v2/contacts?email=a@example.com',
    remoteAddress: peer,
    headers: { authorization: 'Bearer wrong', ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
  });
  return res.statusCode;
}

t.test('behind a trusted balancer, each client has its own failed-auth budget', async (t) => {
  const h = await startRoleApp(t, API_ONLY, { clock: new ManualClock(Date.now()), config: { trustProxy: ['10.0.0.0/8'] } });
  for (let i = 0; i < AUTH_FAILURE_BURST; i++) t.equal(await lookup(h, BALANCER, '198.51.100.1'), 401);
  t.equal(await lookup(h, BALANCER, '198.51.100.1'), 429, 'the guessing client is limited');
  t.equal(await lookup(h, BALANCER, '198.51.100.2'), 401, 'another client behind the same balancer is not');
});

t.test('an untrusted peer cannot pick its address with X-Forwarded-For', async (t) => {
  const h = await startRoleApp(t, API_ONLY, { clock: new ManualClock(Date.now()), config: { trustProxy: ['10.0.0.0/8'] } });
  for (let i = 0; i < AUTH_FAILURE_BURST; i++) t.equal(await lookup(h, '203.0.113.9', `198.51.100.${i}`), 401);
  t.equal(await lookup(h, '203.0.113.9', '198.51.100.200'), 429, 'a fresh X-Forwarded-For does not reset its budget');
});

t.test('without TRUST_PROXY (the default), X-Forwarded-For is ignored', async (t) => {
  const h = await startRoleApp(t, API_ONLY, { clock: new ManualClock(Date.now()) });
  for (let i = 0; i < AUTH_FAILURE_BURST; i++) await lookup(h, BALANCER, `198.51.100.${i}`);
  t.equal(await lookup(h, BALANCER, '198.51.100.200'), 429);
});

t.test('Request-Id: a plausible incoming id is kept, anything else replaced', async (t) => {
  const h = await startRoleApp(t, API_ONLY);
  const kept = await h.app.inject({ method: 'GET', url: '/no-such-route', headers: { 'request-id': 'lb-7f3a:01/x+y=z@edge' } });
  t.equal(kept.headers['request-id'], 'lb-7f3a:01/x+y=z@edge', 'echoed in the header');
  t.equal(kept.json().requestId, 'lb-7f3a:01/x+y=z@edge', 'and in the problem body');
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  for (const hostile of ['x'.repeat(129), 'has space', 'new\tline', '<script>', 'a,b', '']) {
    const res = await h.app.inject({ method: 'GET', url: '/no-such-route', headers: { 'request-id': hostile } });
    t.match(res.headers['request-id'], uuid, `${JSON.stringify(hostile.slice(0, 20))} replaced by a fresh id`);
  }
  const repeated = await h.app.inject({ method: 'GET', url: '/no-such-route', headers: { 'request-id': ['a', 'b'] } });
  t.match(repeated.headers['request-id'], uuid, 'a repeated header is replaced');
  const fresh = await h.app.inject({ method: 'GET', url: '/healthz' });
  t.match(fresh.headers['request-id'], uuid, 'no incoming id: a fresh one');
});
