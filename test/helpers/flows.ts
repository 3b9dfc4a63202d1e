/** Flow test helpers: a trigger committed through the admin API, a flow created and started. */
import type { TestApp } from './app.js';
import { asClientRetries } from './capacity.js';

export const BOOKING_TRIGGER = `SELECT identity, identity_type, ts, event_type, event_id, event_raw
FROM event_triggers
WHERE event_type = 'custom_booking_completed'
  AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`;

export async function putQuery(h: TestApp, kind: 'triggers' | 'segments', name: string, sql: string, org = 'acme') {
  // Saving checks the SQL in a checker process: on a loaded machine that can answer 503 sandbox_busy.
  const res = await asClientRetries(() => h.admin('PUT', `/admin/v1/orgs/${org}/${kind}/${name}`, { sql }));
  if (res.statusCode !== 200) throw new Error(`put ${kind}/${name}: ${res.statusCode} ${res.body}`);
  return res.json() as { version: number; hash: string };
}

/**
 * Creates and starts a triggered flow. It runs when the test says (runFlow), not on each commit: pass
 * `realTime: true` for a flow that runs as events are stored (the default outside tests).
 */
export async function startFlow(h: TestApp, definition: Record<string, unknown>, org = 'acme') {
  const created = await h.admin('POST', `/admin/v1/orgs/${org}/flows`, {
    name: 'Booking follow-up',
    category: 'triggered',
    entry: 'when_contact_triggers_event',
    trigger: 'booking_completed',
    realTime: false,
    ...definition,
  });
  if (created.statusCode !== 201) throw new Error(`create flow: ${created.statusCode} ${created.body}`);
  const started = await h.admin('POST', `/admin/v1/orgs/${org}/flows/${definition.id as string}/start`);
  if (started.statusCode !== 200) throw new Error(`start flow: ${started.statusCode} ${started.body}`);
  return started.json();
}

/** Runs the flow's window now and waits until its sends are delivered and profiles refreshed. */
export async function runFlow(h: TestApp, id: string, org = 'acme') {
  await h.compacted();
  const summary = await h.app.flowsRole!.runner!.run(org, id);
  await h.app.flowsRole!.dispatcher!.idle();
  await h.app.storageRole!.refresher.settled();
  return summary;
}
