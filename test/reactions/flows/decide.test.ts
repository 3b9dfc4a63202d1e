/** The per-row rules of a run (SPEC 8), without a database: identity, segment, re-entry, variants, branches. */
import t from 'tap';
import { SendCounts } from '../../../src/reactions/flows/rules/frequency-caps.js';
import { matches } from '../../../src/reactions/flows/rules/condition.js';
import { decide } from '../../../src/reactions/flows/rules/decide.js';
import { type Decision, type MessageToRender, type RenderedDecision, type RunState } from '../../../src/reactions/flows/rules/decision.js';
import { RenderFailed, renderMessage } from '../../../src/reactions/flows/render/render.js';
import { renderDecisions } from '../../../src/reactions/flows/render/template-renderer.js';
import { pickVariant } from '../../../src/reactions/flows/rules/variant.js';
import type { FlowDefinition } from '../../../src/generated/flow.js';

const base: FlowDefinition = {
  id: 'f1',
  name: 'Follow-up',
  category: 'triggered',
  entry: 'when_contact_triggers_event',
  trigger: 'booking_completed',
  message: { channel: 'outbox', template: { text: 'Enjoy {{ event.properties.city }}, {{ contact.first_name }}' } },
};

function row(email: string | null, eventId: string, properties: Record<string, unknown> = { city: 'Lisbon', nights: 3 }) {
  return {
    identity: email,
    identity_type: email ? 'email' : null,
    ts: new Date('2026-01-01T00:00:00Z'),
    event_type: 'custom_booking_completed',
    event_id: eventId,
    event_raw: JSON.stringify({ event: 'custom', messageId: eventId, properties: { eventName: 'booking_completed', properties } }),
  };
}

function state(flow: Partial<FlowDefinition> = {}, extra: Partial<RunState> = {}): RunState {
  return {
    org: 'acme',
    flow: { ...base, ...flow },
    now: Date.UTC(2026, 0, 2),
    keys: new Set(),
    lastEntry: new Map(),
    eventTimes: new Map(),
    unsubscribed: new Map(),
    suppressed: new Set(),
    quietUntil: () => null,
    unsubscribeUrl: () => null,
    sendCounts: new SendCounts({ org: [], flow: flow.frequencyCap, flowId: 'f1', transactional: false }, new Map()),
    profile: (type, value) => (type === 'user_id' && value === 'u-7' ? { email_address: 'seven@example.com', first_name: 'Seven' } : undefined),
    ...extra,
  };
}

/** decide() chooses the message; rendering (on the renderer's thread in a run) is done inline here. */
const rendered = (d: Decision) => (d.outcome === 'sent' ? renderMessage(d.template.message, d.template.data) : undefined);
const messageOf = (d: RenderedDecision) => (d.outcome === 'sent' ? d.message : undefined);
const inlineRenderer = {
  render: async (jobs: MessageToRender[]) =>
    jobs.map((job) => {
      try {
        return { ok: true as const, message: renderMessage(job.message, job.data) };
      } catch (error) {
        return { ok: false as const, reason: (error as RenderFailed).reason };
      }
    }),
};
const decideAndRender = async (r: Record<string, unknown>, s: RunState) => (await renderDecisions(inlineRenderer, [decide(r, s)]))[0]!;

t.test('identity: e-mail normalised, user_id through the profile, else no_identity', async (t) => {
  const s = state();
  t.match(decide(row(' Ada@Example.COM ', 'e1'), s), { outcome: 'sent', email: 'ada@example.com' });
  t.match(decide({ ...row(null, 'e2'), identity: 'u-7', identity_type: 'user_id' }, s), { outcome: 'sent', email: 'seven@example.com' });
  t.match(decide({ ...row(null, 'e3'), identity: 'u-unknown', identity_type: 'user_id' }, s), { outcome: 'no_identity', email: null });
  t.match(decide(row(null, 'e4'), s), { outcome: 'no_identity', reason: 'the row has no identity' });
  t.match(decide(row('not-an-email', 'e5'), s), { outcome: 'no_identity' });
});

t.test('a suppressed contact is decided suppressed before anything else, with no send id', async (t) => {
  const s = state({ transactional: true }, { suppressed: new Set(['ada@example.com']), keys: new Set(['ada@example.com\u0000e1']) });
  const suppressed = { outcome: 'suppressed', email: 'ada@example.com', sendId: null, variant: null };
  t.match(decide(row('Ada@Example.com', 'e1'), s), suppressed, 'before duplicate');
  t.match(decide({ ...row('ada@example.com', 'e2'), event_id: null }, s), suppressed, 'before a row without event_id fails');
  t.match(decide(row('bob@example.com', 'e3'), s), { outcome: 'sent' }, 'another contact is sent');
});

t.test('a send key is decided once: the same event again is a duplicate', async (t) => {
  const s = state();
  const first = decide(row('ada@example.com', 'e1'), s);
  const again = decide(row('ada@example.com', 'e1'), s);
  t.equal(first.outcome, 'sent');
  t.equal(again.outcome, 'duplicate');
  t.equal(again.sendId, first.sendId, 'same key, same send id');
  t.equal(decide(row('grace@example.com', 'e1'), s).outcome, 'sent', 'another contact is another key');
});

t.test('segment filter: exclude by default, include optional', async (t) => {
  const vip = new Set(['vip@example.com']);
  const exclude = state({ segmentFilter: { segment: 'vip' } }, { segment: vip });
  t.match(decide(row('vip@example.com', 'e1'), exclude), { outcome: 'excluded_by_segment', reason: 'exclude segment vip' });
  t.equal(decide(row('ada@example.com', 'e1'), exclude).outcome, 'sent');
  const include = state({ segmentFilter: { segment: 'vip', mode: 'include' } }, { segment: vip });
  t.equal(decide(row('vip@example.com', 'e2'), include).outcome, 'sent');
  t.match(decide(row('ada@example.com', 'e2'), include), { outcome: 'excluded_by_segment', reason: 'include segment vip' });
});

t.test('re-entry: every_event, once, afterSeconds', async (t) => {
  const every = state();
  t.equal(decide(row('ada@example.com', 'e1'), every).outcome, 'sent');
  t.equal(decide(row('ada@example.com', 'e2'), every).outcome, 'sent');

  const once = state({ reentry: 'once' });
  t.equal(decide(row('ada@example.com', 'e1'), once).outcome, 'sent');
  t.match(decide(row('ada@example.com', 'e2'), once), { outcome: 'reentry_blocked' });
  const onceBefore = state({ reentry: 'once' }, { lastEntry: new Map([['ada@example.com', Date.UTC(2020, 0, 1)]]) });
  t.equal(decide(row('ada@example.com', 'e3'), onceBefore).outcome, 'reentry_blocked', 'an entry from an earlier run counts');

  const now = Date.UTC(2026, 0, 2);
  const after = state({ reentry: { afterSeconds: 3600 } }, { lastEntry: new Map([['ada@example.com', now - 1800_000], ['grace@example.com', now - 3600_000]]) });
  t.match(decide(row('ada@example.com', 'e4'), after), { outcome: 'reentry_blocked', reason: /after 3600 s: last entry 1800 s ago/ });
  t.equal(decide(row('grace@example.com', 'e4'), after).outcome, 'sent', 'exactly afterSeconds later may re-enter');
});

t.test('experiment: deterministic, within ±3% of the weights over 10,000 contacts, holdout sends nothing', async (t) => {
  const variants = [
    { label: 'Variant A', weight: 50 },
    { label: 'Variant B', weight: 40, message: { channel: 'outbox' as const, template: { text: 'B' } } },
    { label: 'Holdout', weight: 10, holdout: true },
  ];
  const counts: Record<string, number> = {};
  for (let i = 0; i < 10_000; i++) {
    const label = pickVariant('203850', `user${i}@example.com`, variants).label;
    counts[label] = (counts[label] ?? 0) + 1;
  }
  t.ok(Math.abs(counts['Variant A']! / 10_000 - 0.5) <= 0.03, `A ${counts['Variant A']}`);
  t.ok(Math.abs(counts['Variant B']! / 10_000 - 0.4) <= 0.03, `B ${counts['Variant B']}`);
  t.ok(Math.abs(counts['Holdout']! / 10_000 - 0.1) <= 0.03, `Holdout ${counts['Holdout']}`);
  t.equal(pickVariant('203850', 'ada@example.com', variants).label, pickVariant('203850', 'ada@example.com', variants).label);

  const s = state({ experiment: { variants } });
  const outcomes = new Map<string, string>();
  for (let i = 0; i < 200; i++) {
    const d = decide(row(`user${i}@example.com`, `e${i}`), s);
    outcomes.set(d.variant!, d.outcome);
    if (d.variant === 'Variant B') t.same(rendered(d), { channel: 'outbox', content: { text: 'B' } });
    if (d.variant === 'Holdout') t.equal(rendered(d), undefined);
  }
  t.equal(outcomes.get('Holdout'), 'holdout');
  t.equal(outcomes.get('Variant A'), 'sent');
});

t.test('branches: first matching when, else the flow message; templates read the event', async (t) => {
  const s = state({
    branches: [
      { when: { field: 'event.properties.nights', op: 'gt', value: 5 }, message: { channel: 'outbox', template: { text: 'long stay in {{ event.properties.city }}' } } },
      { when: { field: 'event.properties.city', op: 'in', value: ['Porto', 'Faro'] }, message: { channel: 'outbox', template: { text: 'north or south' } } },
    ],
  });
  t.same(rendered(decide(row('a@example.com', 'e1', { city: 'Lisbon', nights: 7 }), s)), { channel: 'outbox', content: { text: 'long stay in Lisbon' } });
  t.same(rendered(decide(row('a@example.com', 'e2', { city: 'Porto', nights: 2 }), s)), { channel: 'outbox', content: { text: 'north or south' } });
  t.same(rendered(decide(row('a@example.com', 'e3', { city: 'Lisbon', nights: 2 }), s)), { channel: 'outbox', content: { text: 'Enjoy Lisbon, ' } });

  const data = { event: { properties: { n: 3, s: 'x', missing: null } } };
  t.ok(matches({ field: 'event.properties.n', op: 'gte', value: 3 }, data));
  t.notOk(matches({ field: 'event.properties.n', op: 'lt', value: 3 }, data));
  t.ok(matches({ field: 'event.properties.n', op: 'lte', value: 3 }, data));
  t.ok(matches({ field: 'event.properties.s', op: 'eq', value: 'x' }, data));
  t.ok(matches({ field: 'event.properties.s', op: 'ne', value: 'y' }, data));
  t.ok(matches({ field: 'event.properties.s', op: 'exists' }, data));
  t.notOk(matches({ field: 'event.properties.missing', op: 'exists' }, data));
  t.notOk(matches({ field: 'event.properties.s', op: 'gt', value: 1 }, data), 'mixed types never compare');
  t.notOk(matches({ field: 'event.constructor.name', op: 'exists' }, data), 'inherited members are not fields');
});

t.test('a template that does not render, or a webhook body that is not JSON, is decided failed', async (t) => {
  const bad = state({ message: { channel: 'webhook', url: 'https://example.com/h', template: { body: '{"city": {{ event.properties.city }}}' } } });
  t.match(await decideAndRender(row('a@example.com', 'e1'), bad), { outcome: 'failed', reason: /does not render to JSON/ });
  const good = state({ message: { channel: 'webhook', url: 'https://example.com/h', template: { body: '{"city": {{ event.properties.city | json }}}' } } });
  t.same(messageOf(await decideAndRender(row('a@example.com', 'e1'), good)), { channel: 'webhook', url: 'https://example.com/h', body: { city: 'Lisbon' } });
  const unknownFilter = state({ message: { channel: 'outbox', template: { text: '{{ event.event_id | nope }}' } } });
  t.match(await decideAndRender(row('a@example.com', 'e1'), unknownFilter), { outcome: 'failed', reason: /does not render/ });
});
