/**
 * POST …/flows/{id}/simulate: what the flow would do now for one contact, and nothing recorded or sent.
 * Real app and storage, the outbox channel; each decision a run takes is reached once (sent with its
 * message, duplicate after a run, unsubscribed, excluded by a draft's re-entry, holdout by a draft
 * experiment), and every input a caller can get wrong is refused by name.
 */
import t from 'tap';
import { book, customEvent, startTestApp, type TestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';

const OUTBOX = { channel: 'outbox', template: { text: 'hi {{ contact.email_address }} from {{ event.properties.city }}' } };

type Cred = { partnerId: string; partnerSecret: string };
async function simulate(h: TestApp, body: Record<string, unknown>, flow = 'f1') {
  return h.admin('POST', `/admin/v1/orgs/acme/flows/${flow}/simulate`, body);
}

async function recorded(h: TestApp) {
  const [row] = await h.db().all<{ sends: bigint; decisions: bigint }>(
    'SELECT (SELECT count(*) FROM flow_sends) AS sends, (SELECT count(*) FROM flow_decisions) AS decisions',
  );
  return { sends: Number(row!.sends), decisions: Number(row!.decisions) };
}

t.test('one contact: the rows, the decision with its reason, the rendered message; nothing recorded', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  // Booked before the flow goes live: no run will ever read it.
  t.equal((await book(h, cred, 'early@example.com', 'b-early')).statusCode, 200);
  await h.compacted();
  await startFlow(h, { id: 'f1', message: OUTBOX });
  for (const [i, email] of ['ada@example.com', 'bob@example.com', 'cy@example.com'].entries()) t.equal((await book(h, cred, email, `b-${i}`)).statusCode, 200);
  await h.compacted();

  const first = await simulate(h, { identity: 'email:Ada@Example.com' });
  t.equal(first.statusCode, 200, first.body);
  const body = first.json();
  t.equal(body.email, 'ada@example.com');
  t.same(body.rows.map((r: { event_id: string }) => r.event_id), ['b-0'], "only that contact's rows");
  t.match(body.decisions, [{ eventId: 'b-0', outcome: 'sent', reason: null, message: { channel: 'outbox', content: { text: 'hi ada@example.com from Lisbon' } } }]);
  t.same(await recorded(h), { sends: 0, decisions: 0 }, 'nothing recorded');

  t.match((await simulate(h, { identity: 'email:early@example.com' })).json().decisions, [{ eventId: 'b-early', outcome: 'not_in_a_window', reason: /before the flow went live/, message: null }]);

  // Draft definitions: another template, and an experiment whose only variant is a holdout.
  const draft = await simulate(h, { identity: 'email:ada@example.com', definition: { name: 'Draft', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', message: { channel: 'outbox', template: { text: 'draft for {{ contact.email_address }}' } } } });
  t.match(draft.json().decisions, [{ outcome: 'sent', branch: null, message: { content: { text: 'draft for ada@example.com' } } }], 'a draft renders its own message');
  // Branches: the one whose condition holds for the row is named (customEvent books 3 nights).
  const branched = await simulate(h, {
    identity: 'email:ada@example.com',
    definition: {
      name: 'Draft', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', message: OUTBOX,
      branches: [
        { when: { field: 'event.properties.nights', op: 'gt', value: 5 }, message: { channel: 'outbox', template: { text: 'long' } } },
        { when: { field: 'event.properties.nights', op: 'lte', value: 5 }, message: { channel: 'outbox', template: { text: 'short' } } },
      ],
    },
  });
  t.match(branched.json().decisions, [{ outcome: 'sent', branch: 1, message: { content: { text: 'short' } } }], 'the second branch, named by its index');
  const holdout = await simulate(h, {
    identity: 'email:ada@example.com',
    definition: { name: 'Draft', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', message: OUTBOX, experiment: { variants: [{ label: 'control', weight: 1, holdout: true }] } },
  });
  t.match(holdout.json().decisions, [{ outcome: 'holdout', variant: 'control', message: null }]);

  // After a real run the same entry is a duplicate; the contact's consent is honoured.
  const run = await runFlow(h, 'f1');
  t.equal(run.decisions.length, 3);
  const after = await recorded(h);
  t.match((await simulate(h, { identity: 'email:ada@example.com' })).json().decisions, [{ outcome: 'duplicate', reason: /already decided/ }]);
  await h.admin('PUT', '/admin/v1/orgs/acme/contacts/consent', { identity: 'email:dan@example.com', topic: 'all', status: 'unsubscribed' });
  t.equal((await book(h, cred, 'dan@example.com', 'b-dan')).statusCode, 200);
  await h.compacted();
  t.match((await simulate(h, { identity: 'email:dan@example.com' })).json().decisions, [{ eventId: 'b-dan', outcome: 'unsubscribed', reason: /unsubscribed from topic all/ }]);
  t.same(await recorded(h), after, 'simulations after a run record nothing either');

  // A trigger version given as SQL instead of the live one.
  const other = await simulate(h, { identity: 'email:dan@example.com', sql: `${BOOKING_TRIGGER} AND 1 = 0` });
  t.equal(other.statusCode, 200, other.body);
  t.same(other.json().rows, [], 'the SQL given is what runs');
  // A contact without rows in the window.
  t.match((await simulate(h, { identity: 'email:nobody@example.com' })).json(), { email: 'nobody@example.com', rows: [], decisions: [] });
});

t.test('refused inputs: identity, window, flow, draft, SQL, another org', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  await h.createOrg('beta');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, { id: 'f1', message: OUTBOX });
  const cases: Array<[string, Record<string, unknown>, number, string, string?]> = [
    ['no identity', {}, 400, 'invalid_request'],
    ['a malformed identity', { identity: 'phone:123' }, 400, 'invalid_identity'],
    ['a user_id no profile has', { identity: 'user_id:u-404' }, 404, 'contact_not_found'],
    ['from after to', { identity: 'email:a@example.com', from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' }, 400, 'invalid_request'],
    ['a window over 31 days', { identity: 'email:a@example.com', from: '2025-01-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }, 400, 'invalid_request'],
    ['a draft that is not a flow', { identity: 'email:a@example.com', definition: { name: 'x' } }, 422, 'invalid_flow'],
    ['SQL the guard refuses', { identity: 'email:a@example.com', sql: "SELECT getenv('HOME')" }, 422, 'invalid_trigger'],
    ['an unknown member', { identity: 'email:a@example.com', send: true }, 400, 'invalid_request'],
  ];
  for (const [why, body, status, code] of cases) {
    const res = await simulate(h, body);
    t.equal(res.statusCode, status, `${why}: ${res.body}`);
    t.equal(res.json().code, code, why);
  }
  t.equal((await simulate(h, { identity: 'email:a@example.com' }, 'nope')).json().code, 'flow_not_found');
  const otherOrg = await h.admin('POST', '/admin/v1/orgs/beta/flows/f1/simulate', { identity: 'email:a@example.com' });
  t.equal(otherOrg.json().code, 'flow_not_found', "another org's flow is not found from this org");
});
