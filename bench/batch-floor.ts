/**
 * The floor of a batch lookup of 100 (issue 41), without HTTP, authentication or the service: parse the
 * body, 100 `Map` gets of random contacts among `--profiles` (default 100,000, as `--only audience`
 * imports), concatenate each found entry's prebuilt JSON (~450 B) with its identity and meta tail, encode
 * the answer to UTF-8 once. What this costs is what any design pays before a byte reaches a socket:
 * random reads over 100,000 profiles miss the CPU caches, so it grows with the org's size, not only with
 * the batch's. Run: `npx tsx bench/batch-floor.ts [--profiles 25600]`.
 */
const at = process.argv.indexOf('--profiles');
const N = at === -1 ? 100_000 : Number(process.argv[at + 1]);
const ROUNDS = 30_000;

const index = new Map<string, { found: string }>();
for (let i = 0; i < N; i++) {
  const contact = JSON.stringify({
    email_address: `c${i}@example.com`, first_name: `First${i}`, last_name: `Last${i}`, user_id: `u${i}`, address_city: `City${i % 50}`, address_state: null,
    address_country: null, campaigns_received: [], flow_variant_membership: [], total_lifetime_value: 0, total_lifetime_value_jde: '$0.00',
    last_purchase_date: null, order_count: 0, first_seen_at: null, last_seen_at: null,
  });
  index.set(`c${i}@example.com`, { found: `"status":"found","contact":${contact},"meta":{"eventsThrough":null,` });
}
const bodies = Array.from({ length: 256 }, () => JSON.stringify({ identities: Array.from({ length: 100 }, () => `email:c${Math.floor(Math.random() * N)}@example.com`) }));
const tail = '"computedAt":"2026-11-30T06:00:00.000Z","lagMs":0}';

let bytes = 0;
const started = performance.now();
for (let r = 0; r < ROUNDS; r++) {
  const { identities } = JSON.parse(bodies[r % bodies.length]!) as { identities: string[] };
  let answer = '{"status":"success","contacts":[';
  for (const [i, raw] of identities.entries()) answer += `${i === 0 ? '' : ','}{"identity":${JSON.stringify(raw)},${index.get(raw.slice(6))!.found}${tail}}`;
  bytes += Buffer.byteLength(`${answer}]}`);
}
const us = ((performance.now() - started) * 1000) / ROUNDS;
console.log(JSON.stringify({ profiles: N, usPerBatch: Math.round(us), answerBytes: Math.round(bytes / ROUNDS) }));
