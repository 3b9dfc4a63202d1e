/**
 * What an org's idle flows cost: the service's CPU (its whole process tree) while one org has `--flows`
 * live triggered flows due every `--every` seconds and nobody sends an event, on the built service.
 *
 *   npm run build:server && npx tsx bench/idle-flows.ts [--flows 60] [--every 1] [--seconds 20]
 *
 * Each due run of a flow that finds nothing new reads its window; before 2026-12-01 it also wrote
 * last_run_at (0.69–0.79 of a core for 60 one-second flows on 2 cores; 0.28–0.39 after). Prints the CPU in
 * cores beside the same service with no flow, measured the same way in the same run.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { say } from './harness.js';
import { admin, sleep, startService } from './soak/service.js';

const { values } = parseArgs({ options: { flows: { type: 'string', default: '60' }, every: { type: 'string', default: '1' }, seconds: { type: 'string', default: '20' } } });
const root = resolve(import.meta.dirname, '..');
const SETTLE_MS = 10_000;

async function idleCores(flows: number): Promise<number> {
  const workDir = mkdtempSync(join(tmpdir(), 'audience-idle-flows-'));
  const service = await startService({ root, workDir, dataDir: join(workDir, 'data'), env: { QUERIES_DIR: join(workDir, 'queries'), WEBHOOK_ALLOW_PRIVATE: 'true' } }, 0);
  try {
    const ok = async (method: 'POST' | 'PUT', path: string, body?: unknown) => {
      const res = await admin(service.url, method, path, body);
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.json)}`);
    };
    await ok('POST', '/admin/v1/orgs', { slug: 'idle', name: 'idle' });
    const sql = "SELECT identity, identity_type, ts, event_type, event_id, event_raw FROM event_triggers WHERE event_type = 'custom_booking' AND ts > {cursor_start_time} AND ts <= {cursor_end_time}";
    await ok('PUT', '/admin/v1/orgs/idle/triggers/booking', { sql });
    for (let i = 0; i < flows; i++) {
      const message = { channel: 'webhook', url: 'http://127.0.0.1:9/hook', template: { body: '{}' } };
      await ok('POST', '/admin/v1/orgs/idle/flows', { id: `f${i}`, name: `f${i}`, category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking', realTime: true, scheduleSeconds: Number(values.every), message });
      await ok('POST', `/admin/v1/orgs/idle/flows/f${i}/start`);
    }
    await sleep(SETTLE_MS);
    const [cpu0, t0] = [service.child.cpuSeconds(), performance.now()];
    await sleep(Number(values.seconds) * 1000);
    return (service.child.cpuSeconds() - cpu0) / ((performance.now() - t0) / 1000);
  } finally {
    await service.child.stop();
  }
}

const without = await idleCores(0);
const withFlows = await idleCores(Number(values.flows));
say(`idle flows: ${values.flows} flows due every ${values.every} s cost ${withFlows.toFixed(2)} cores (process tree); with no flow ${without.toFixed(2)}`);
