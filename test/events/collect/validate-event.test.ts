import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { validateBatch, validateBatchMember, validateEvent } from '../../../src/events/collect/validate-event.js';
import type { Event } from '../../../src/generated/event.js';
import { schemasDir } from '../../../src/core/paths.js';

const credentials = { partnerId: 'partner-1', partnerSecret: 'secret-1' };
const body = { clientId: 'client-1', sentAt: 1_700_000_000_000 };
const base = { ...credentials, ...body };
const item = { productId: 'p1', variant: 'red-m', quantity: 2 };
const track = (event: string, properties?: Record<string, unknown>) => ({
  ...base,
  type: 'track',
  event,
  ...(properties ? { properties } : {}),
});
const identify = (traits: Record<string, unknown>) => ({ ...base, type: 'identify', traits });
const without = (o: Record<string, unknown>, key: string) => Object.fromEntries(Object.entries(o).filter(([k]) => k !== key));
const paths = (r: ReturnType<typeof validateEvent>) => (r.ok ? [] : r.errors.map((e) => e.path));

/** Every predefined track event with exactly its required properties (SPEC 4.2). */
const minimal: Record<string, Record<string, unknown>> = {
  page_view: {},
  product_view: { productId: 'p1' },
  add_to_cart: { productId: 'p1', variant: 'red-m', quantity: 1 },
  remove_from_cart: { productId: 'p1', variant: 'red-m', quantity: 1 },
  update_cart: { cartItems: [item] },
  cart: { cartItems: [item] },
  complete_transaction: { transactionId: 't1', revenue: 49.9, cartItems: [item] },
  registration: { email: 'ann@example.com' },
  authentication: { userId: 'u1', isLoggedIn: true },
  favorite: { productId: 'p1' },
  waitlist: { productId: 'p1', variant: 'red-m' },
  search: { term: 'shoes' },
  custom: { eventName: 'plan_upgraded' },
};

const schema = (file: string) => JSON.parse(readFileSync(join(schemasDir, file), 'utf8'));

t.test('the table covers every event name the schema knows', async (t) => {
  const trackEvent = schema('event.schema.json').$defs.trackEvent;
  t.same(Object.keys(minimal).sort(), [...trackEvent.properties.event.enum].sort());
});

t.test('each predefined event is accepted with its required properties', async (t) => {
  for (const [event, properties] of Object.entries(minimal)) {
    t.same(validateEvent(track(event, properties)), { ok: true, event: track(event, properties) }, event);
  }
  t.ok(validateEvent(track('page_view')).ok, 'page_view needs no properties');
});

t.test('each required property, when missing, is named and is the only error', async (t) => {
  for (const [event, properties] of Object.entries(minimal)) {
    for (const key of Object.keys(properties)) {
      t.same(paths(validateEvent(track(event, without(properties, key)))), [`/properties/${key}`], `${event} without ${key}`);
    }
    if (Object.keys(properties).length > 0) {
      t.same(paths(validateEvent(track(event))), ['/properties'], `${event} without properties`);
    }
  }
  for (const key of Object.keys(item)) {
    const cart = { cartItems: [item, without(item, key)] };
    t.same(paths(validateEvent(track('cart', cart))), [`/properties/cartItems/1/${key}`], `cart item without ${key}`);
  }
});

const refused: [name: string, event: unknown, paths: string[]][] = [
  ['custom without eventName', track('custom', { requiresIdentity: false }), ['/properties/eventName']],
  ['custom eventName of 39 chars', track('custom', { eventName: 'x'.repeat(39) }), ['/properties/eventName']],
  ['custom eventName empty', track('custom', { eventName: '' }), ['/properties/eventName']],
  ['requiresIdentity not boolean', track('custom', { eventName: 'e', requiresIdentity: 'false' }), ['/properties/requiresIdentity']],
  ['custom key outside properties.properties', track('custom', { eventName: 'e', plan: 'pro' }), ['/properties/plan']],
  ['identify without traits', { ...base, type: 'identify' }, ['/traits']],
  ['identify without traits.email', identify({ name: 'Ann' }), ['/traits/email']],
  ['identify with a bad email, reported once', identify({ email: 'ann' }), ['/traits/email']],
  ['identify carrying event', { ...identify({ email: 'ann@example.com' }), event: 'custom' }, ['/event']],
  ['unknown top-level member', { ...track('page_view'), color: 'red' }, ['/color']],
  ['no type', without(track('page_view'), 'type'), ['/type']],
  ['unknown type', { ...track('page_view'), type: 'page' }, ['/type']],
  ['unknown event', track('purchase'), ['/event']],
  ['track without event', without(track('page_view'), 'event'), ['/event']],
  ['sentAt as a string', { ...track('page_view'), sentAt: '123' }, ['/sentAt']],
  ['sentAt in fractional ms', { ...track('page_view'), sentAt: 1_700_000_000_000.5 }, ['/sentAt']],
  ['sentAt in seconds', { ...track('page_view'), sentAt: 1_700_000_000 }, ['/sentAt']],
  ['sentAt in microseconds', { ...track('page_view'), sentAt: 1_700_000_000_000_000 }, ['/sentAt']],
  ['sentAt before 2000', { ...track('page_view'), sentAt: 946_684_799_999 }, ['/sentAt']],
  ['sentAt negative', { ...track('page_view'), sentAt: -1 }, ['/sentAt']],
  ['quantity as a string', track('add_to_cart', { ...item, quantity: '2' }), ['/properties/quantity']],
  ['quantity 0', track('add_to_cart', { ...item, quantity: 0 }), ['/properties/quantity']],
  ['revenue as a string', track('complete_transaction', { ...minimal.complete_transaction, revenue: '9' }), ['/properties/revenue']],
  ['isLoggedIn as a string', track('authentication', { userId: 'u1', isLoggedIn: 'yes' }), ['/properties/isLoggedIn']],
  ['clientId of 46 chars', { ...track('page_view'), clientId: 'c'.repeat(46) }, ['/clientId']],
  ['clientId empty', { ...track('page_view'), clientId: '' }, ['/clientId']],
  ['timestamp without time', { ...track('page_view'), timestamp: '2024-05-01' }, ['/timestamp']],
  ['timestamp as epoch', { ...track('page_view'), timestamp: 1714521600000 }, ['/timestamp']],
  ['timezone out of range', { ...track('page_view'), timezone: 900 }, ['/timezone']],
  ['messageId of 101 chars', { ...track('page_view'), messageId: 'm'.repeat(101) }, ['/messageId']],
  ['context.debug not boolean', { ...track('page_view'), context: { debug: 'true' } }, ['/context/debug']],
  ['no partnerId', without(track('page_view'), 'partnerId'), ['/partnerId']],
  ['no partnerSecret', without(track('page_view'), 'partnerSecret'), ['/partnerSecret']],
  ['not an object', [track('page_view')], ['/']],
];

t.test('refused events name the offending member, and nothing else', async (t) => {
  for (const [name, event, expected] of refused) {
    t.same(paths(validateEvent(event)), expected, name);
  }
  const unknown = validateEvent({ ...track('page_view'), color: 'red' });
  t.same(unknown, { ok: false, errors: [{ path: '/color', message: 'is not an allowed member' }] });
  const required = validateEvent(identify({}));
  t.same(required, { ok: false, errors: [{ path: '/traits/email', message: 'is required' }] });
});

t.test('a sentAt that cannot be epoch milliseconds of a plausible time says so', async (t) => {
  const seconds = validateEvent({ ...track('page_view'), sentAt: 1_700_000_000 });
  t.same(seconds, {
    ok: false,
    errors: [{ path: '/sentAt', message: 'must be epoch milliseconds, at least 946684800000 (2000-01-01); a value in seconds is too small' }],
  });
  const micros = validateEvent({ ...track('page_view'), sentAt: 1_700_000_000_000_000 });
  t.match(micros, { ok: false, errors: [{ path: '/sentAt', message: /^must be epoch milliseconds, at most 4102444800000 \(2100-01-01\)/ }] });
  const member = validateBatchMember({ ...body, sentAt: 1_700_000_000, type: 'track', event: 'page_view' });
  t.match(member, { ok: false, errors: [{ path: '/sentAt', message: /epoch milliseconds/ }] }, 'batch members too');
  t.same(paths(validateEvent({ ...track('page_view'), sentAt: 946_684_800_000 })), [], '2000-01-01 exactly is accepted');
  t.same(paths(validateEvent({ ...track('page_view'), sentAt: 4_102_444_800_000 })), [], '2100-01-01 exactly is accepted');
});

t.test('extra keys are kept where clients add their own', async (t) => {
  const accepted: [string, unknown][] = [
    ['context', { ...track('page_view'), context: { debug: true, page: { url: 'https://s.example/', path: '/' }, app: { build: 7 } } }],
    ['traits', { ...identify({ email: 'ann@example.com', plan: 'pro', address: { city: 'Oslo', street: 'Karl Johan' } }) }],
    ['custom properties.properties', track('custom', { eventName: 'e', requiresIdentity: false, properties: { plan: 'pro', n: 1 } })],
    ['predefined properties', track('product_view', { productId: 'p1', listId: 'summer' })],
    ['cart items', track('cart', { cartItems: [{ ...item, price: 9.5, giftWrap: true }] })],
    ['clientId of 45 chars, eventName of 38', { ...track('custom', { eventName: 'e'.repeat(38) }), clientId: 'c'.repeat(45) }],
    [
      'every common member',
      {
        ...track('page_view', { title: 'Home', referrer: 'https://r.example/', url: 'https://s.example/' }),
        context: { userAgent: 'ua', library: { name: 'audience.js', version: '1.0.0' } },
        messageId: 'm-1',
        timestamp: '2024-05-01T12:00:00.000Z',
        ipAddress: '203.0.113.7',
        timezone: -120,
        traits: { email: 'ann@example.com' },
        userId: 'u1',
      },
    ],
  ];
  for (const [name, event] of accepted) t.ok(validateEvent(event).ok, name);
});

t.test('generated types narrow by type and event', async (t) => {
  const productOf = (e: Event): string | undefined =>
    e.type === 'track' && e.event === 'add_to_cart' ? e.properties.productId : undefined;
  const r = validateEvent(track('add_to_cart', item));
  t.equal(r.ok && productOf(r.event), 'p1');
});

t.test('batch envelope', async (t) => {
  const batch = (members: unknown[], extra: Record<string, unknown> = {}) => ({ ...credentials, batch: members, ...extra });
  const member = { ...body, type: 'track', event: 'page_view' };
  const envelopePaths = (b: unknown) => {
    const r = validateBatch(b);
    return r.ok ? [] : r.errors.map((e) => e.path);
  };
  t.same(validateBatch(batch([member], { context: { debug: true } })), { ok: true, batch: batch([member], { context: { debug: true } }) });
  t.same(envelopePaths(batch(Array(2500).fill(member))), [], '2,500 members');
  t.same(envelopePaths(batch(Array(2501).fill(member))), ['/batch'], '2,501 members');
  t.same(envelopePaths(batch([])), ['/batch'], 'empty');
  t.same(envelopePaths(without(batch([member]), 'batch')), ['/batch'], 'no batch');
  t.same(envelopePaths(without(batch([member]), 'partnerSecret')), ['/partnerSecret'], 'no secret');
  t.same(envelopePaths(batch([member], { sentAt: 1 })), ['/sentAt'], 'unknown envelope member');
  t.same(envelopePaths(batch([member], { context: [] })), ['/context'], 'context not an object');
});

t.test('batch members', async (t) => {
  const member = { ...body, type: 'track', event: 'product_view', properties: { productId: 'p1' } };
  t.same(validateBatchMember(member), { ok: true, event: member });
  t.ok(validateBatchMember({ ...body, type: 'identify', traits: { email: 'ann@example.com' } }).ok);
  const memberPaths = (m: unknown) => {
    const r = validateBatchMember(m);
    return r.ok ? [] : r.errors.map((e) => e.path);
  };
  t.same(memberPaths({ ...member, partnerId: 'partner-1' }), ['/partnerId'], 'carrying partnerId');
  t.same(memberPaths({ ...member, ...credentials }), ['/partnerId', '/partnerSecret'], 'carrying credentials');
  t.same(memberPaths(without(member, 'clientId')), ['/clientId']);
  t.same(memberPaths({ ...member, properties: {} }), ['/properties/productId']);
  t.same(memberPaths({ ...member, extra: 1 }), ['/extra']);
});

t.test('the closed member lists match the members the body declares', async (t) => {
  const { properties, $defs } = schema('event.schema.json');
  // The members of the type branches: a track's event and properties, an alias's previousId.
  const declared = [...Object.keys($defs.eventCommon.properties), 'event', 'properties', 'previousId'].sort();
  t.same(Object.keys(properties).sort(), [...declared, 'partnerId', 'partnerSecret', 'writeKey'].sort(), 'Event');
  t.same(Object.keys($defs.batchMember.properties).sort(), declared, 'BatchMember');
  const branchEvents = $defs.trackEvent.oneOf.flatMap(({ $ref }: { $ref: string }) => {
    const tag = $defs[$ref.replace('#/$defs/', '')].properties.event;
    return tag.const === undefined ? tag.enum : [tag.const];
  });
  t.same(branchEvents.sort(), [...$defs.trackEvent.properties.event.enum].sort(), 'event enum = discriminator branches');
});
