/**
 * Event names hold no control character, on every path an event comes in by: a custom event's
 * properties.eventName on /http/v1/collect and /http/v1/batch, and the Segment track `event` it is made from
 * on /v1/track, /v1/batch and Jitsu's /api/s/track. Generated names up to the longest accepted (38
 * characters) carry C0, DEL, C1, line separators, bidi controls and the sequences that act on a terminal
 * (OSC 52 clipboard write, OSC 0 window title, CSI 2J clear screen, C1's one-byte CSI); each is refused as
 * the path refuses any invalid event (412 schema_violation; 400 message_rejected for the SDKs) and kept in
 * quarantine with the reason, and nothing reaches the events table. The same name without the control
 * is accepted, so the control is what is refused.
 */
import fc from 'fast-check';
import t from 'tap';
import { customEvent, startTestApp } from '../../helpers/app.js';

/** The most a custom event's name may take (schemas/event-parts.schema.json). */
const MAX_NAME = 38;

const char = (from: number, to: number) => fc.integer({ min: from, max: to }).map((c) => String.fromCharCode(c));
const control = fc.oneof(
  char(0x00, 0x1f),
  fc.constant('\u007f'),
  char(0x80, 0x9f),
  fc.constantFrom('\u2028', '\u2029', '\u061c', '\u200e', '\u200f', '\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069'),
  fc.constantFrom('\u001b]52;c;aGFja2Vk\u0007', '\u001b]0;pwned\u0007', '\u001b[2J', '\u009b2J', '\u009d0;t\u009c', '\u001b[31m', '\r'),
);
const printable = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.:éü日');

/** A name with one control (or sequence) at a random place: `plain` is the same name without it. */
const hostileName = control.chain((c) =>
  fc
    .record({ text: fc.string({ unit: printable, minLength: 1, maxLength: MAX_NAME - c.length }), full: fc.boolean(), at: fc.nat() })
    .map(({ text, full, at }) => {
      // Half the names at the longest length accepted.
      const plain = full ? text.padEnd(MAX_NAME - c.length, 'x') : text;
      const i = at % (plain.length + 1);
      return { name: plain.slice(0, i) + c + plain.slice(i), plain };
    }),
);

const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** A name in an assertion's message: raw, its controls would break the TAP stream (a C1 or U+2028 did). */
const shown = (name: string) => name.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

t.test('a control character in an event name is refused on every path and quarantined', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  const writeKey = cred.writeKey;
  const auth = { authorization: `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`, 'content-type': 'application/json' };
  const sdk = (url: string, body: unknown, headers: Record<string, string> = auth) => h.app.inject({ method: 'POST', url, headers, payload: JSON.stringify(body) });
  const custom = (eventName: string, n: string) => ({ clientId: 'c-1', sentAt: Date.now(), type: 'track', event: 'custom', messageId: n, properties: { eventName, requiresIdentity: false, properties: {} } });
  const track = (event: string, n: string) => ({ type: 'track', userId: 'u-1', event, messageId: n, context: { debug: true, traits: { email: 'ada@example.com' } } });
  let runs = 0;
  let accepted = 0;

  await fc.assert(
    fc.asyncProperty(hostileName, async ({ name, plain }) => {
      const n = `m${++runs}`;
      const collect = await h.collect(customEvent(cred, { messageId: `${n}-c`, context: { debug: true }, properties: { eventName: name, properties: {} } }));
      t.equal(collect.statusCode, 412, `collect ${shown(name)}`);
      t.equal(collect.json().code, 'schema_violation');
      t.match(collect.json().errors, [{ path: '/properties/eventName', message: /must not contain control characters/ }]);

      const batch = await h.batch({ ...cred, context: { debug: true }, batch: [custom('fine', `${n}-b0`), custom(name, `${n}-b1`)] });
      t.equal(batch.statusCode, 412, `batch ${shown(name)}`);
      t.match(batch.json().errors, [{ path: '/batch/1/properties/eventName', message: /must not contain control characters/ }]);

      const segment = await sdk('/v1/track', track(name, `${n}-t`));
      t.equal(segment.statusCode, 400, `/v1/track ${shown(name)}`);
      t.equal(segment.json().code, 'message_rejected');
      t.match(segment.json().errors, [{ path: '/event', message: /must not contain control characters/ }]);

      const segmentBatch = await sdk('/v1/batch', { batch: [track('Viewed Pricing', `${n}-sb0`), track(name, `${n}-sb1`)] });
      t.equal(segmentBatch.statusCode, 400, `/v1/batch ${shown(name)}`);
      t.match(segmentBatch.json().errors, [{ path: '/batch/1/event', message: /must not contain control characters/ }]);

      const jitsu = await sdk('/api/s/track', track(name, `${n}-j`), { 'x-write-key': `id:${writeKey}`, 'content-type': 'application/json' });
      t.equal(jitsu.statusCode, 400, `/api/s/track ${shown(name)}`);
      t.equal(jitsu.json().code, 'message_rejected');

      // The same name without its control goes in (a Segment name must have a letter or a digit).
      const fine = await h.collect(customEvent(cred, { messageId: `${n}-ok`, properties: { eventName: plain, properties: {} } }));
      t.equal(fine.statusCode, 200, `without the control: ${shown(plain)}`);
      accepted++;
    }),
    { numRuns: 30 },
  );

  await h.compacted();
  const rows = await h.db().all<{ code: string; errors: string; raw: string }>('SELECT code, errors::VARCHAR AS errors, raw::VARCHAR AS raw FROM quarantine');
  const refused = rows.filter((r) => r.code === 'schema_violation');
  // Per run: collect, the batch's member, /v1/track, the SDK batch's member, /api/s/track.
  t.equal(refused.length, runs * 5, 'every refused event is in quarantine');
  t.ok(refused.every((r) => /must not contain control characters/.test(r.errors)), 'each with the reason');
  t.equal(rows.filter((r) => r.code === 'batch_rejected').length, runs * 2, "and each batch's valid member beside it");
  const stored = await h.db().all<{ event_name: string }>('SELECT event_name FROM events');
  t.equal(stored.length, accepted, 'only the names without controls are stored');
  t.notOk(stored.some((e) => e.event_name.match(CONTROLS)), 'no stored event name holds a control');
});
