/**
 * A private nats-server per test, for tests that stop, kill or restart NATS (the machine's shared
 * server must not be touched). Uses Debian's binary; each server gets its own port, config and store.
 */
import { restartablePort } from './free-port.js';
import { scaled } from './deadline.js';
import { canConnect, isStopped, natsProcess, serverVersionAtLeast } from './nats-process.js';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Test } from 'tap';

export { hasNatsServerBinary } from './nats-process.js';

/** `sync_interval` arrived in nats-server 2.10; older servers refuse a config that has it. */
export const SYNC_INTERVAL_SINCE: [number, number] = [2, 10];

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

export async function startNatsServer(t: Test, opts: { syncAlways?: boolean; extraConfig?: string[] } = {}): Promise<NatsServerHandle> {
  const port = await restartablePort();
  // Registered before t.testdir(): tap runs teardowns in the order they were registered, so the server is
  // gone before its store is removed (a removal under a live server fails with ENOTEMPTY).
  let proc: ReturnType<typeof natsProcess> | undefined;
  t.teardown(async () => {
    proc?.signal('SIGKILL');
    await proc?.exited();
  });
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
      ...(opts.extraConfig ?? []),
      '',
    ].join('\n'),
  );

  const server = natsProcess(config, port);
  proc = server;
  await server.start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    syncAlways,
    async stop() {
      server.signal('SIGTERM');
      await server.exited();
    },
    kill9() {
      server.signal('SIGKILL');
    },
    restart: server.start,
    async freeze() {
      server.signal('SIGSTOP');
      // The stop lands when each of the server's threads next enters the kernel: until /proc says
      // stopped, a thread still running could answer one more PING.
      for (const deadline = Date.now() + scaled(1_000); Date.now() < deadline && server.pid() !== undefined && !isStopped(server.pid()!); ) await new Promise((r) => setTimeout(r, 10));
    },
    thaw() {
      server.signal('SIGCONT');
    },
  };
}

/** The machine's NATS (NATS_URL or the default port) if something accepts connections there within 1 s. */
export async function natsUrlIfReachable(): Promise<string | undefined> {
  const url = natsUrl();
  const first = new URL(url.split(',')[0]!);
  return (await canConnect(first.hostname, Number(first.port || 4222), scaled(1000))) ? url : undefined;
}

export function natsUrl(): string {
  return process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
}

