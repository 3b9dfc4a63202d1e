/** /healthz, /readyz, /metrics (SPEC 9). */
import t from 'tap';
import { customEvent, startTestApp } from '../helpers/app.js';

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
  const metrics = (await h.app.inject({ url: '/metrics' })).body;
  t.match(metrics, /audience_events_accepted_total\{environment="production"\} 1/);
  t.match(metrics, /audience_events_quarantined_total\{code="schema_violation"\} 1/);
  t.match(metrics, /audience_log_append_seconds_count \d+/);
  t.match(metrics, /audience_events_rejected_total\{code="schema_violation"\} 1/);
  t.match(metrics, /audience_events_rejected_total\{code="invalid_credentials"\} 1/);
  t.match(metrics, /audience_events_rejected_total\{code="invalid_json"\} 1/);
  t.match(metrics, /audience_compaction_lag_records 0/);
});

t.test('unknown routes answer problem+json 404 with a Request-Id', async (t) => {
  const h = await startTestApp(t);
  const res = await h.app.inject({ url: '/nope' });
  t.equal(res.statusCode, 404);
  t.equal(res.json().code, 'not_found');
  t.equal(res.headers['request-id'], res.json().requestId);
});
