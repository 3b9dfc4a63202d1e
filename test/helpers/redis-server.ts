/**
 * Redis for tests: the machine's (REDIS_URL or 127.0.0.1:6379; CI has it), and a private redis-server on
 * a free port for tests that kill or freeze it. Tests sharing the machine's Redis each use their own key
 * prefix, so they never see each other's budgets.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { restartablePort } from './free-port.js';
import { canConnect, isStopped } from './probes.js';
import { scaled } from './deadline.js';

const REDIS_SERVER = 'redis-server';
const START_TIMEOUT_MS = 10_000;

interface Tap {
  teardown(fn: () => unknown): void;
}

export function redisUrl(): string {
  return process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/** The machine's Redis if something accepts connections there within 1 s. */
export async function redisUrlIfReachable(): Promise<string | undefined> {
  const url = new URL(redisUrl());
  return (await canConnect(url.hostname, Number(url.port || 6379), scaled(1000))) ? redisUrl() : undefined;
}

/** A REDIS_KEY_PREFIX no other test uses. */
export function uniquePrefix(): string {
  return `test-${randomUUID()}`;
}

/** A client for looking at keys, disconnected at teardown. */
export function inspectRedis(t: Tap, url: string): Redis {
  const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  t.teardown(() => redis.disconnect());
  return redis;
}

/** Why tests that run their own redis-server are skipped, or false when they can run. */
export function withoutRedisServer(): string | false {
  return spawnSync(REDIS_SERVER, ['--version']).status === 0 ? false : 'redis-server binary not found (a private Redis is needed to kill it)';
}

export interface RedisServerHandle {
  url: string;
  /** SIGKILL, like a crash; resolves once the process is gone. */
  kill9(): Promise<void>;
  /** Starts it again on the same port (empty: it persists nothing). */
  restart(): Promise<void>;
  /** SIGSTOP: connections stay open but nothing is answered (a stuck Redis). */
  freeze(): Promise<void>;
  /** SIGCONT after `freeze`. */
  thaw(): void;
}

export async function startRedisServer(t: Tap): Promise<RedisServerHandle> {
  const port = await restartablePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const signal = (name: NodeJS.Signals): void => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill(name);
  };
  const start = async (): Promise<void> => {
    await exited;
    // Nothing written to disk: a restart is an empty Redis, like a lost cache node.
    const proc = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    child = proc;
    const deadline = Date.now() + scaled(START_TIMEOUT_MS);
    while (!(await canConnect('127.0.0.1', port, scaled(200)))) {
      if (proc.exitCode !== null || Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`redis-server did not start on port ${port}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  await start();
  t.teardown(async () => {
    signal('SIGCONT');
    signal('SIGKILL');
    await exited;
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    async kill9() {
      signal('SIGKILL');
      await exited;
    },
    restart: start,
    async freeze() {
      signal('SIGSTOP');
      for (const deadline = Date.now() + scaled(1_000); Date.now() < deadline && child?.pid !== undefined && !isStopped(child.pid); ) await new Promise((r) => setTimeout(r, 10));
    },
    thaw() {
      signal('SIGCONT');
    },
  };
}
