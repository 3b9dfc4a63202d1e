/** The metrics an operator alerts on: request durations by route pattern and status, and the scrape-time gauges. */
import t from 'tap';
import { customEvent, startTestApp } from '../helpers/app.js';

t.test('request durations are labelled by route pattern and status, never by the raw path', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  t.equal((await h.collect(customEvent(cred.production))).statusCode, 200);
  t.equal((await h.collect(customEvent({ partnerId: 'pk_x', partnerSecret: 'nope' }))).statusCode, 401);
  await h.admin('GET', '/admin/v1/orgs/acme');
  await h.admin('GET', '/admin/v1/orgs/ghost');
  await h.app.inject({ url: '/probe-7f3a/../etc/passwd?x=1' });
  const metrics = await h.metrics();
  t.match(metrics, /audience_http_request_duration_seconds_count\{method="POST",route="\/http\/v1\/collect",status="200"\} 1/);
  t.match(metrics, /audience_http_request_duration_seconds_count\{method="POST",route="\/http\/v1\/collect",status="401"\} 1/);
  t.match(metrics, /audience_http_request_duration_seconds_count\{method="GET",route="\/admin\/v1\/orgs\/:slug",status="200"\} 1/);
  t.match(metrics, /audience_http_request_duration_seconds_count\{method="GET",route="\/admin\/v1\/orgs\/:slug",status="404"\} 1/);
  t.match(metrics, /audience_http_request_duration_seconds_count\{method="GET",route="unmatched",status="404"\} 1/);
  t.notMatch(metrics, /7f3a/, 'no path a client chose appears in a label');
});

t.test('scrape-time gauges: profiles held, log size, free space, pending sends, lag in seconds', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  for (const email of ['a@example.com', 'b@example.com']) await h.collect(customEvent(cred.production, { traits: { email } }));
  await h.compacted();
  const metrics = await h.metrics();
  t.match(metrics, /^audience_profile_index_entries 2$/m);
  t.match(metrics, /^audience_ready 1$/m);
  const logBytes = Number(/^audience_log_bytes (\d+)$/m.exec(metrics)?.[1]);
  t.ok(logBytes > 0, `the embedded log's size (${logBytes})`);
  t.ok(Number(/^audience_data_dir_available_bytes (\d+)$/m.exec(metrics)?.[1]) > 0, 'free space in DATA_DIR');
  t.match(metrics, /^audience_sends_pending 0$/m);
  t.match(metrics, /^audience_compaction_lag_seconds 0$/m, 'caught up: 0 s behind');
  t.match(metrics, /^audience_org_databases_open 1$/m);
});
