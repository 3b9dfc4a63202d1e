/**
 * A private nats-server with JetStream for one benchmark run: its own free port and store in the run's
 * work dir (the machine's shared server on 4222 is never touched), stopped with the run.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canConnect, serverVersionAtLeast } from '../test/helpers/nats-process.js';
import { SYNC_INTERVAL_SINCE } from '../test/helpers/nats-server.js';
import { Child, freePort, tail } from './procs.js';

const READY_MS = 10_000;

export interface BenchNats {
  url: string;
  child: Child;
  /** True when every acknowledged write is fsynced first (2.10+); 2.9 has no such option. */
  syncAlways: boolean;
}

export async function startNats(natsServer: string, workDir: string, cpus: string | undefined): Promise<BenchNats> {
  const port = await freePort();
  const dir = join(workDir, 'nats');
  mkdirSync(dir, { recursive: true });
  // As production asks (README "NATS mode"), where the server supports it.
  const syncAlways = serverVersionAtLeast(SYNC_INTERVAL_SINCE);
  const config = join(dir, 'nats.conf');
  writeFileSync(
    config,
    [`listen: "127.0.0.1:${port}"`, 'jetstream {', `  store_dir: ${JSON.stringify(join(dir, 'store'))}`, ...(syncAlways ? ['  sync_interval: always'] : []), '}', ''].join('\n'),
  );
  const child = Child.exec('nats-server', natsServer, ['-c', config], { logFile: join(workDir, 'nats-server.log'), ...(cpus ? { cpus } : {}) });
  const deadline = Date.now() + READY_MS;
  while (!(await canConnect('127.0.0.1', port, 200))) {
    if (!child.running || Date.now() > deadline) {
      child.kill();
      throw new Error(`nats-server did not start on port ${port}:\n${tail(child.logFile)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `nats://127.0.0.1:${port}`, child, syncAlways };
}
