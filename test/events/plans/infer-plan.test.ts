/**
 * A draft plan from samples (issue 42): whatever the samples — generated JSON objects of any shape,
 * nesting and types — the draft compiles as a plan and accepts every sample it was made from; members
 * every sample carried are required, few distinct strings an enum, whole numbers integers.
 */
import fc from 'fast-check';
import t from 'tap';
import { compilePlan } from '../../../src/events/plans/compile-plan.js';
import { inferPlan } from '../../../src/events/plans/infer-plan.js';

t.test('the draft compiles and accepts every sample it was inferred from', async (t) => {
  let checked = 0;
  fc.assert(
    fc.property(fc.array(fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 5 }), { maxKeys: 8 }), { minLength: 1, maxLength: 40 }), (samples) => {
      const { schema, samples: n } = inferPlan(samples);
      const compiled = compilePlan(schema);
      if (!compiled.ok) return JSON.stringify(schema).length > 16_384; // a draft past a plan's size is refused at PUT, not wrong
      for (const sample of samples) {
        const violations = compiled.check(sample);
        // A sample too large to check within MAX_CHECK_COST is refused for that, not for its shape.
        if (violations.length === 1 && violations[0]!.keyword === 'cost') continue;
        if (violations.length > 0) throw new Error(`${JSON.stringify(sample)} breaks its own draft ${JSON.stringify(schema)}: ${JSON.stringify(violations)}`);
      }
      checked++;
      return n === samples.length;
    }),
    { numRuns: 300 },
  );
  t.ok(checked > 250, `${checked} drafts checked against their samples`);
});

t.test('required, enum, integer and number, nested objects and array items', async (t) => {
  const samples = Array.from({ length: 30 }, (_, i) => ({
    city: ['Lisbon', 'Porto', 'Faro'][i % 3],
    nights: i + 1,
    value: i % 2 ? 10.5 : 10,
    ...(i % 5 ? { coupon: `C-${i}` } : {}),
    address: { zip: `${1000 + i}`, country: 'PT' },
    tags: i % 2 ? ['a', 'b'] : [],
  }));
  const { schema } = inferPlan(samples);
  t.same(schema, {
    type: 'object',
    required: ['address', 'city', 'nights', 'tags', 'value'],
    properties: {
      address: { type: 'object', required: ['country', 'zip'], properties: { country: { type: 'string', enum: ['PT'] }, zip: { type: 'string' } } },
      city: { type: 'string', enum: ['Faro', 'Lisbon', 'Porto'] },
      coupon: { type: 'string' },
      nights: { type: 'integer' },
      tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } },
      value: { type: 'number' },
    },
  });
  t.same(inferPlan([]), { schema: { type: 'object' }, samples: 0 }, 'no sample: any object');
  const compiled = compilePlan(schema);
  t.ok(compiled.ok && compiled.check({ city: 'Braga', nights: 1.5, value: 1, address: { zip: '1', country: 'PT' }, tags: [] }).length === 2, 'an unseen city and a fractional night break it');
});
