/**
 * A private nats-server per test, for tests that stop, kill or restart NATS (the machine's shared
 * server must not be touched). Uses Debian's binary; each server gets its own port, config and store.
 */
import { freePort } from './free-port.js';
import { canConnect, isStopped } from './probes.js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Test } from 'tap';

const NATS_SERVER = '/usr/sbin/nats-server';
/** `sync_interval` arrived in nats-server 2.10; older servers refuse a config that has it. */
const SYNC_INTERVAL_SINCE: [number, number] = [2, 10];
const START_TIMEOUT_MS = 10_000;

export interface NatsServerHandle {
  url: string;
  port: number;
  /** True when the server fsyncs before every ack (`sync_interval: always`): asked for and supported. */
  syncAlways: boolean;
  /** Graceful stop (SIGTERM), resolves once the process has exited. */
  stop(): Promise<void>;
  /** SIGKILL, like a crash; `restart()` waits for the process to be gone. */
  kill9(): void;
  /** Starts it again on the same port with the same store. */
  restart(): Promise<void>;
  /** SIGSTOP: the server stops answering but its TCP connections stay open (a wedged server). */
  freeze(): Promise<void>;
  /** SIGCONT after `freeze`. */
  thaw(): void;
}

export async function startNatsServer(t: Test, opts: { syncAlways?: boolean } = {}): Promise<NatsServerHandle> {
  const port = await freePort();
  // Reuse the test's fixture dir if it already made one: a second t.testdir() would wipe it.
  const root = existsSync(t.testdirName) ? t.testdirName : t.testdir();
  const dir = join(root, `nats-${port}`);
  await mkdir(dir, { recursive: true });
  const syncAlways = opts.syncAlways === true && serverVersionAtLeast(SYNC_INTERVAL_SINCE);
  const config = join(dir, 'nats.conf');
  await writeFile(
    config,
    [
      `listen: "127.0.0.1:${port}"`,
      'jetstream {',
      `  store_dir: ${JSON.stringify(join(dir, 'store'))}`,
      ...(syncAlways ? ['  sync_interval: always'] : []),
      '}',
      '',
    ].join('\n'),
  );

  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const start = async (): Promise<void> => {
    await exited;
    const proc = spawn(NATS_SERVER, ['-c', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    child = proc;
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await canConnect('127.0.0.1', port, 200))) {
      if (proc.exitCode !== null || Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`nats-server did not start on port ${port}:\n${stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const signal = (name: NodeJS.Signals): void => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill(name);
  };

  await start();
  t.teardown(async () => {
    signal('SIGKILL');
    await exited;
  });
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    syncAlways,
    async stop() {
      signal('SIGTERM');
      await exited;
    },
    kill9() {
      signal('SIGKILL');
    },
    restart: start,
    async freeze() {
      signal('SIGSTOP');
      // The stop lands when each of the server's threads next enters the kernel: until /proc says
      // stopped, a thread still running could answer one more PING.
      for (let i = 0; i < 100 && child?.pid !== undefined && !isStopped(child.pid); i++) await new Promise((r) => setTimeout(r, 10));
    },
    thaw() {
      signal('SIGCONT');
    },
  };
}

export function hasNatsServerBinary(): boolean {
  return existsSync(NATS_SERVER);
}

/** The machine's NATS (NATS_URL or the default port) if something accepts connections there within 1 s. */
export async function natsUrlIfReachable(): Promise<string | undefined> {
  const url = natsUrl();
  const first = new URL(url.split(',')[0]!);
  return (await canConnect(first.hostname, Number(first.port || 4222), 1000)) ? url : undefined;
}

export function natsUrl(): string {
  return process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
}

function serverVersionAtLeast([major, minor]: [number, number]): boolean {
  const out = spawnSync(NATS_SERVER, ['--version'], { encoding: 'utf8' }).stdout ?? '';
  const match = /v(\d+)\.(\d+)/.exec(out);
  if (!match) return false;
  const [have, haveMinor] = [Number(match[1]), Number(match[2])];
  return have > major || (have === major && haveMinor >= minor);
}
