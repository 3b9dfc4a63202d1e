/**
 * Log entries carry the facts compaction stores (issue 39: compaction never parses twice). The property:
 * the facts an entry carries are exactly the facts compaction derived from the stored body before, for
 * any event; records written before entries carried them are read as they were.
 */
import t from 'tap';
import fc from 'fast-check';
import { eventFacts } from '../../../src/events/log/event-facts.js';
import { decodeRecord, encodeRecord, encodeVersion1Record } from '../../../src/events/log/record-codec.js';
import { acceptedEntry, type Body, messageIdOf, rejectedEntry, storedBody } from '../../../src/events/collect/to-log-entry.js';
import { planEntries } from '../../../src/events/compaction/plan-batch.js';
import { DedupeWindow } from '../../../src/events/compaction/dedupe-window.js';
import { IdentityMap } from '../../../src/events/compaction/identity-map.js';
import { Tombstones } from '../../../src/events/compaction/tombstones.js';
import type { LogEntry } from '../../../src/events/log/types.js';

const who = { org: 'acme', environment: 'production' as const };
const RECEIVED_AT = 1_767_225_600_000;

/** Any JSON text a member may hold, long strings and every plane of Unicode included. */
const anyText = fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 300 }), fc.constant(''));
const anyJson = fc.jsonValue({ maxDepth: 4 });
const time = fc.oneof(
  fc.integer({ min: RECEIVED_AT - 3 * 86_400_000, max: RECEIVED_AT + 3 * 86_400_000 }),
  fc.constantFrom(0, -1, 1e15, RECEIVED_AT / 1000),
  anyText,
);
const timestamp = fc.oneof(
  fc.date({ min: new Date('1970-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString()),
  anyText,
  fc.integer(),
);
const properties = fc.dictionary(anyText, anyJson, { maxKeys: 8 });

/** Events as the collector gets them parsed: the members eventFacts reads, each present or absent, any value. */
const event: fc.Arbitrary<Body> = fc.record(
  {
    type: fc.oneof(fc.constantFrom('track', 'identify', 'alias'), anyText),
    event: fc.oneof(fc.constantFrom('custom', 'purchase', 'page_view'), anyText),
    clientId: fc.oneof(anyText, fc.integer()),
    messageId: fc.oneof(anyText, fc.string({ minLength: 100, maxLength: 100 })),
    userId: fc.oneof(anyText, fc.integer()),
    previousId: fc.oneof(anyText, fc.integer()),
    sentAt: time,
    timestamp,
    traits: fc.oneof(
      fc.record({ email: fc.oneof(fc.emailAddress(), anyText, fc.constant(`${'a'.repeat(64)}@${'b'.repeat(185)}.com`)), userId: anyText, firstName: anyText }, { requiredKeys: [] }),
      properties,
    ),
    properties: fc.oneof(
      fc.record({ eventName: anyText, properties: fc.oneof(properties, fc.constant(null)), requiresIdentity: fc.oneof(fc.boolean(), anyJson) }, { requiredKeys: [] }),
      properties,
    ),
    context: properties,
    partnerSecret: anyText,
  },
  { requiredKeys: ['type', 'clientId'] },
);

t.test('the facts an entry carries are the ones compaction derived from its stored body', async (t) => {
  await fc.assert(
    fc.property(event, fc.integer({ min: 0, max: 2 * RECEIVED_AT }), (body, receivedAt) => {
      const messageId = messageIdOf(body);
      const entry = acceptedEntry(body, storedBody(body, messageId), who, messageId, receivedAt);
      const [decoded] = decodeRecord(encodeRecord([entry, rejectedEntry(body, who, 'schema_violation', [], receivedAt)]));
      t.same(decoded!.facts, eventFacts(JSON.parse(decoded!.body), receivedAt));
      t.equal(decoded!.body, entry.body);
    }),
    { numRuns: 400 },
  );
});

t.test('records of the earlier layout are read as written, without facts; an unknown layout is refused', async (t) => {
  await fc.assert(
    fc.property(fc.array(event, { minLength: 0, maxLength: 70 }), (bodies) => {
      const entries = bodies.map((body, i) => acceptedEntry(body, storedBody(body, `m-${i}`), who, `m-${i}`, RECEIVED_AT));
      t.same(decodeRecord(encodeVersion1Record(entries)), entries.map((e) => ({ ...e, facts: null })));
      t.same(decodeRecord(encodeRecord(entries)), entries);
    }),
    { numRuns: 60 },
  );
  t.throws(() => decodeRecord(Uint8Array.of(0x05, 0x00)), /unknown layout/);
});

t.test('compaction plans an entry that carries facts without parsing its body', async (t) => {
  const body = { type: 'track', event: 'custom', clientId: 'c-1', traits: { email: 'Ada@Example.com' }, properties: { eventName: 'booked', properties: { nights: 3 } } };
  const carried = acceptedEntry(body, storedBody(body, 'm-1'), who, 'm-1', RECEIVED_AT);
  // A body no parser reads: planned from the facts alone.
  const unreadable: LogEntry = { ...carried, body: '{"not json' };
  const [decoded] = decodeRecord(encodeRecord([unreadable]));
  const state = { dedupe: new DedupeWindow(), identities: new IdentityMap(), pendingByClient: new Map(), tombstones: new Tombstones() };
  const plan = await planEntries([{ seq: 1, index: 0, entry: decoded! }], state);
  t.equal(plan.events.length, 1);
  t.match(plan.events[0], { email: 'ada@example.com', facts: { eventName: 'custom_booked', properties: '{"nights":3}' } });
  // Without facts (a record of the earlier layout) the body is what is read.
  await t.rejects(planEntries([{ seq: 2, index: 0, entry: { ...unreadable, messageId: 'm-2', facts: null } }], state), SyntaxError);
});

t.test('records of any size, in any order, are encoded whole and stay as encoded after later ones', async (t) => {
  // 1–40 bodies to a record, each empty to ~100 KB of any code points: records from a few bytes to several
  // times the encoder's first buffer (64 KB), a small one right after a large one.
  const long = fc.tuple(fc.string({ unit: 'binary', minLength: 1, maxLength: 3 }), fc.nat({ max: 11 * 1024 })).map(([piece, n]) => piece.repeat(n));
  const sizes: number[] = [];
  const entry = fc.record({ body: fc.oneof(fc.string({ unit: 'binary' }), long), messageId: fc.string({ maxLength: 100 }) });
  await fc.assert(
    fc.property(fc.array(fc.array(entry, { minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 6 }), (records) => {
      const entries = records.map((r) => r.map(({ body, messageId }) => acceptedEntry({ type: 'track', clientId: 'c' }, body, who, messageId, RECEIVED_AT)));
      const payloads = entries.map((e) => encodeRecord(e));
      sizes.push(...payloads.map((p) => p.length));
      t.same(payloads.map((p) => decodeRecord(p)), entries);
    }),
    { numRuns: 40, endOnFailure: true },
  );
  t.ok(Math.max(...sizes) > 256 * 1024 && Math.min(...sizes) < 1024, `from ${Math.min(...sizes)} to ${Math.max(...sizes)} bytes`);
});
