/** /healthz, /readyz, /metrics (SPEC 9; /metrics behind the admin key on PORT). */
import t from 'tap';
import { ADMIN_KEY, customEvent, startTestApp } from '../helpers/app.js';

t.test('health, readiness and metrics', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  t.equal((await h.app.inject({ url: '/healthz' })).statusCode, 200);
  const ready = await h.app.inject({ url: '/readyz' });
  t.equal(ready.statusCode, 200);
  t.equal(ready.json().log, 'embedded');
  await h.collect(customEvent(cred.production));
  await h.collect(customEvent(cred.production, { type: 'bogus' }));
  await h.collect(customEvent({ partnerId: 'pk_x', partnerSecret: 'nope' }));
  await h.app.inject({ method: 'POST', url: '/http/v1/collect', headers: { 'content-type': 'application/json' }, payload: '{' });
  await h.compacted();
  const metrics = await h.metrics();
  t.match(metrics, /audience_events_accepted_total\{environment="production"\} 1/);
  t.match(metrics, /audience_events_quarantined_total\{code="schema_violation"\} 1/);
  t.match(metrics, /audience_log_append_seconds_count \d+/);
  t.match(metrics, /audience_events_rejected_total\{code="schema_violation"\} 1/);
  t.match(metrics, /audience_events_rejected_total\{code="invalid_credentials"\} 1/);
  t.match(metrics, /audience_events_rejected_total\{code="invalid_json"\} 1/);
  t.match(metrics, /audience_compaction_lag_records 0/);
});

t.test('/metrics on PORT asks for the admin key, and counts a guesser like the admin API does', async (t) => {
  const h = await startTestApp(t);
  const none = await h.app.inject({ url: '/metrics' });
  t.equal(none.statusCode, 401, 'no key: 401');
  t.equal(none.json().code, 'invalid_admin_key');
  t.match(none.headers['www-authenticate'], /^Bearer/);
  t.notMatch(none.body, /audience_/, 'and no metric');
  const guesses = [];
  for (let i = 0; i < 40; i++) guesses.push((await h.app.inject({ url: '/metrics', remoteAddress: '203.0.113.9', headers: { authorization: `Bearer guess-${i}` } })).statusCode);
  t.same([guesses[0], guesses.at(-1)], [401, 429], 'wrong keys from one address: 401, then 429 as for /admin/v1');
  t.equal((await h.app.inject({ url: '/admin/v1/orgs', remoteAddress: '203.0.113.9', headers: { authorization: `Bearer ${ADMIN_KEY}` } })).statusCode, 429, 'one budget with the admin API');
  t.match(await h.metrics(), /^# HELP /m, 'the admin key from another address: the metrics');
});

t.test('unknown routes answer problem+json 404 with a Request-Id', async (t) => {
  const h = await startTestApp(t);
  const res = await h.app.inject({ url: '/nope' });
  t.equal(res.statusCode, 404);
  t.equal(res.json().code, 'not_found');
  t.equal(res.headers['request-id'], res.json().requestId);
});
