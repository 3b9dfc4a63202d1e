/**
 * Issue 26, part 4: POST /admin/v1/orgs/{slug}/triggers/{name}/diff — the contacts a candidate SQL adds
 * and removes against the live version over one window, exactly; no live version (or another org's
 * trigger name) makes every contact added; refused SQL, reversed and non-ISO windows are refused.
 */
import t from 'tap';
import { customEvent, startTestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery } from '../../helpers/flows.js';

const SIX = 'SELECT identity, identity_type, ts, event_type, event_id, event_raw FROM event_triggers';
const WINDOW = 'ts > {cursor_start_time} AND ts <= {cursor_end_time}';
/** Lisbon bookings and abandoned carts: ada and linus stay, grace goes, hedy comes. */
const CANDIDATE = `${SIX} WHERE ${WINDOW} AND ((event_type = 'custom_booking_completed' AND json_extract_string(properties, '$.city') = 'Lisbon') OR event_type = 'custom_cart_abandoned')`;

t.test('the diff endpoint', async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  await h.createOrg('beta');
  const send = async (who: string, eventName: string, city: string) => {
    const res = await h.collect(customEvent(acme.production, { clientId: `c-${who}`, traits: { email: `${who}@example.com` }, properties: { eventName, properties: { city } } }));
    t.equal(res.statusCode, 200, res.body);
  };
  await send('ada', 'booking_completed', 'Lisbon');
  await send('grace', 'booking_completed', 'Porto');
  await send('linus', 'booking_completed', 'Lisbon');
  await send('hedy', 'cart_abandoned', 'Faro');
  await send('ada', 'cart_abandoned', 'Lisbon');
  await h.compacted();
  const live = await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await putQuery(h, 'triggers', 'beta_only', BOOKING_TRIGGER, 'beta');
  const diff = (name: string, body: Record<string, unknown>, org = 'acme') => h.admin('POST', `/admin/v1/orgs/${org}/triggers/${name}/diff`, body);

  const res = await diff('booking_completed', { sql: CANDIDATE });
  t.equal(res.statusCode, 200, res.body);
  const body = res.json();
  t.same(
    { liveVersion: body.liveVersion, added: body.added, removed: body.removed, unchanged: body.unchanged, truncated: body.truncated },
    { liveVersion: live.version, added: ['hedy@example.com'], removed: ['grace@example.com'], unchanged: 2, truncated: false },
    'hedy added, grace removed, ada and linus in both (ada twice in the candidate: one contact)',
  );
  t.match(body.window, { from: String, to: String });

  const same = (await diff('booking_completed', { sql: BOOKING_TRIGGER })).json();
  t.same([same.added, same.removed, same.unchanged], [[], [], 3], 'the live SQL itself changes nothing');

  for (const name of ['not_saved_yet', 'beta_only']) {
    const none = await diff(name, { sql: CANDIDATE });
    t.equal(none.statusCode, 200, none.body);
    t.same(
      { ...none.json(), window: undefined },
      { liveVersion: null, window: undefined, added: ['ada@example.com', 'hedy@example.com', 'linus@example.com'], removed: [], unchanged: 0, truncated: false },
      `${name}: no live version in this org, so every contact is added (another org's trigger is not read)`,
    );
  }

  const huge = await diff('booking_completed', { sql: CANDIDATE, from: '1970-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' });
  t.equal(huge.statusCode, 200);
  t.same([huge.json().added, huge.json().removed, huge.json().unchanged], [['hedy@example.com'], ['grace@example.com'], 2], 'a window of 130 years reads what there is');
  const before = await diff('booking_completed', { sql: CANDIDATE, from: '2000-01-01T00:00:00Z', to: '2000-01-02T00:00:00Z' });
  t.same([before.json().added, before.json().removed, before.json().unchanged], [[], [], 0], 'an empty window');

  const refused = await diff('booking_completed', { sql: `${SIX} WHERE ts > {cursor_start_time} - INTERVAL 1 HOUR AND ts <= {cursor_end_time}` });
  t.equal(refused.statusCode, 422);
  t.equal(refused.json().code, 'invalid_trigger');
  t.match(refused.json().reason, /\{cursor_start_time\} is arithmetic \(-\) on a window placeholder/);
  const dml = await diff('booking_completed', { sql: 'DELETE FROM events' });
  t.equal(dml.statusCode, 422, 'the guard refuses what is not a SELECT');

  const reversed = await diff('booking_completed', { sql: CANDIDATE, from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' });
  t.equal(reversed.statusCode, 400);
  t.match(reversed.json().detail ?? reversed.body, /from must be before to/);
  for (const from of ['yesterday', '2026-01-01', '1767225600000']) {
    const bad = await diff('booking_completed', { sql: CANDIDATE, from });
    t.equal(bad.statusCode, 400, `from ${from}`);
  }
  t.equal((await diff('booking_completed', {})).statusCode, 400, 'sql is required');
  t.equal((await diff('booking_completed', { sql: CANDIDATE, limit: 5 })).statusCode, 400, 'no other member');
  t.equal((await diff('booking_completed', { sql: CANDIDATE }, 'nope')).statusCode, 404, 'an unknown org');
  t.equal((await h.admin('POST', '/admin/v1/orgs/acme/segments/vip/diff', { sql: CANDIDATE })).statusCode, 404, 'segments have no diff');
});
