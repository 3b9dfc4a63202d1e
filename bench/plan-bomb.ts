/**
 * A schema bomb beside another org's collect (issue 42: "collect p99 of another org unchanged within 20 %").
 * One service as `npm start` runs it (compiled, embedded log); org `calm` sends ordinary events at a fixed
 * rate, alone, then while org `bomb` — whose enforced plan is the costliest kind found (anyOf of 80
 * branches with patterns over array items) — sends 30 KB events at a fixed rate beside it; then again
 * alone. calm's p99 beside the bomb against the mean of its two p99s alone, and how the bomb's events were
 * answered (412: refused for their cost, never run). Prints a table and writes the JSON to
 * bench/results/plan-bomb.json.
 *   npx tsx bench/plan-bomb.ts [--rate 1000] [--bomb-rate 200] [--seconds 10]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BodyTemplate } from './bodies.js';
import { type LoadResult, runLoad } from './load.js';
import { freePort } from './procs.js';
import { SERVICE_NODE_FLAGS } from '../src/core/node-flags.js';

const ADMIN_KEY = 'bench-admin-key-0123456789abcdef0123';
const { values } = parseArgs({ options: { rate: { type: 'string', default: '1000' }, 'bomb-rate': { type: 'string', default: '200' }, seconds: { type: 'string', default: '10' } } });
const rate = Number(values.rate);
const bombRate = Number(values['bomb-rate']);
const seconds = Number(values.seconds);

const dataDir = mkdtempSync(join(tmpdir(), 'audience-plan-bomb-'));
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const server = spawn(process.execPath, [...SERVICE_NODE_FLAGS, 'dist/src/server.js'], {
  env: { ...process.env, DATA_DIR: dataDir, ADMIN_KEY, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const admin = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(url + path, { method, headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  const json = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
};
const serverCpu = () => 0;

try {
  for (const deadline = Date.now() + 60_000; ; ) {
    const ready = await fetch(`${url}/readyz`).then((r) => r.ok, () => false);
    if (ready) break;
    if (Date.now() > deadline || server.exitCode !== null) throw new Error('the service did not get ready');
    await new Promise((r) => setTimeout(r, 200));
  }
  type Creds = { partnerId: string; partnerSecret: string };
  const calm = ((await admin('POST', '/admin/v1/orgs', { slug: 'calm', name: 'Calm' })).credentials as Record<string, Creds>).production!;
  const bomb = ((await admin('POST', '/admin/v1/orgs', { slug: 'bomb', name: 'Bomb' })).credentials as Record<string, Creds>).production!;
  const branch = (i: number) => ({ type: 'object', properties: { a: { type: 'string', pattern: `^(x|y|z)*${i}(a|b)*$` }, b: { type: 'integer', minimum: i } }, required: ['a', 'b'] });
  await admin('PUT', '/admin/v1/orgs/bomb/events/plans/custom_booking_completed', {
    schema: { type: 'object', properties: { list: { type: 'array', items: { anyOf: Array.from({ length: 80 }, (_, i) => branch(i)) } } } },
    mode: 'enforce',
    environments: ['production'],
  });
  const bombBody = Buffer.from(
    JSON.stringify({ ...bomb, clientId: 'b', sentAt: Date.now(), type: 'track', event: 'custom', traits: { email: 'b@example.com' }, properties: { eventName: 'booking_completed', properties: { list: Array.from({ length: 500 }, () => ({ a: 'xxxxxxxx', b: -1 })) } } }),
  );
  const calmLoad = (tag: string): Promise<LoadResult> =>
    runLoad({ url, path: '/http/v1/collect', bodies: BodyTemplate.single(calm, tag), connections: 16, amount: rate * seconds, overallRate: rate, serverCpu });
  const before = await calmLoad('alone-1');
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const bombs = runLoad({ url, path: '/http/v1/collect', bodies: { next: () => bombBody, events: 1, bytes: bombBody.length }, connections: 8, amount: bombRate * seconds * 10, overallRate: bombRate, serverCpu, stop: stopped });
  const beside = await calmLoad('beside');
  stop();
  const bombResult = await bombs;
  const after = await calmLoad('alone-2');
  const aloneP99 = (before.latency.p99 + after.latency.p99) / 2;
  const result = {
    rate,
    bombRate,
    seconds,
    calm: { aloneP99: [before.latency.p99, after.latency.p99], besideP99: beside.latency.p99, besideP50: beside.latency.p50, aloneP50: [before.latency.p50, after.latency.p50], non2xx: before.non2xx + beside.non2xx + after.non2xx },
    ratio: Math.round((beside.latency.p99 / aloneP99) * 1000) / 1000,
    goal: '≤ 1.2',
    bomb: { requests: bombResult.requests, statusCodes: bombResult.statusCodes },
  };
  console.log(JSON.stringify(result, null, 2));
  writeFileSync('bench/results/plan-bomb.json', `${JSON.stringify(result, null, 2)}\n`);
} finally {
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  rmSync(dataDir, { recursive: true, force: true });
}
