/**
 * Of two observations of one trait received in the same millisecond, the one the log holds last wins
 * (pipelines/profiles.sql, observed()): two identifies in one batch share their receipt, and so may
 * requests racing on one collector. Generated identifies of one contact, all received at one instant, sent
 * alone and in batches, with the per-contact fold run between some of them: each field of the profile is
 * the last value sent for it, served and computed alike.
 */
import fc from 'fast-check';
import t from 'tap';
import { foldContactActivity } from '../../../src/events/compaction/fold-contact-activity.js';
import { ProfileIndex } from '../../../src/events/profiles/profile-index.js';
import { ProfileMaterializer } from '../../../src/events/profiles/profile-materializer.js';
import { startTestApp } from '../../helpers/app.js';

const EMAIL = 'ada@example.com';
const FIELDS = ['first_name', 'last_name', 'user_id', 'address_city', 'address_country', 'timezone'] as const;
type Field = (typeof FIELDS)[number];
const ZONES = ['Europe/Lisbon', 'Asia/Tokyo', 'America/Sao_Paulo', 'Pacific/Chatham'];

/** One identify's traits: some of the fields, each with a value of its own. */
const observation = fc.subarray([...FIELDS], { minLength: 1 });
/** How the identifies are sent: a batch of some, one alone, or a fold of what is compacted so far. */
const send = fc.oneof(
  fc.record({ kind: fc.constant('batch' as const), members: fc.array(observation, { minLength: 2, maxLength: 6 }) }),
  fc.record({ kind: fc.constant('alone' as const), members: fc.array(observation, { minLength: 1, maxLength: 1 }) }),
  fc.record({ kind: fc.constant('fold' as const), members: fc.constant([] as Field[][]) }),
);

t.test('the last observation of a trait wins among those received in the same millisecond', async (t) => {
  const now = Date.parse('2026-06-01T12:00:00.000Z');
  const h = await startTestApp(t, { clock: { now: () => now } });
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(send, { minLength: 1, maxLength: 8 }), async (sends) => {
      const org = `o${++run}`;
      const cred = await h.createOrg(org, { currencySymbol: '€' });
      const expected: Partial<Record<Field, string>> = {};
      let n = 0;
      const identify = (fields: Field[]) => {
        const id = ++n;
        const value = (field: Field) => (field === 'timezone' ? ZONES[id % ZONES.length]! : `${field}-${id}`);
        for (const field of fields) expected[field] = value(field);
        const has = (field: Field) => (fields.includes(field) ? value(field) : undefined);
        const address = { city: has('address_city'), country: has('address_country') };
        return {
          clientId: 'c-ada',
          sentAt: now,
          messageId: `m-${id}`,
          type: 'identify',
          ...(has('user_id') ? { userId: has('user_id') } : {}),
          traits: { email: EMAIL, firstName: has('first_name'), lastName: has('last_name'), address, timezone: has('timezone') },
        };
      };
      for (const { kind, members } of sends) {
        if (kind === 'fold') {
          await h.compacted();
          await h.db(org).transaction((c) => foldContactActivity(c));
          continue;
        }
        const res = kind === 'alone' ? await h.collect({ ...cred.production, ...identify(members[0]!) }) : await h.batch({ ...cred.production, batch: members.map(identify) });
        if (res.statusCode !== 200) throw new Error(`${kind}: ${res.statusCode} ${res.body}`);
      }
      await h.compacted();
      const computed = new ProfileIndex();
      await new ProfileMaterializer(h.app.orgStorage!.orgs, computed).refreshOrg(org);
      for (const [source, index] of [['served', h.app.profiles], ['computed', computed]] as const) {
        const profile = index.lookup(org, 'email', EMAIL)?.profile;
        for (const field of FIELDS) {
          const got = profile?.[field];
          if ((got ?? undefined) !== expected[field]) throw new Error(`${org} ${source} ${field}: ${String(got)}, the last sent ${expected[field]} (${JSON.stringify(sends)})`);
        }
      }
    }),
    { numRuns: 30 },
  );
  t.pass('every field held the last value sent');
});
