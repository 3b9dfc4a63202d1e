/**
 * One nats-server child process from a config file, startable again after it exits: the part that
 * nats-server.ts (one server) and nats-cluster.ts (three nodes) share.
 */
import { canConnect, isStopped } from './probes.js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { scaled } from './deadline.js';

export const NATS_SERVER = '/usr/sbin/nats-server';
const START_TIMEOUT_MS = 10_000;

export interface NatsProcess {
  /** Spawns the server (after the previous process, if any, has exited) and waits until its port accepts. */
  start(): Promise<void>;
  /** Sends a signal if the process is running. */
  signal(name: NodeJS.Signals): void;
  /** Resolves once the current process has exited (at once if none runs). */
  exited(): Promise<void>;
  pid(): number | undefined;
}

export function natsProcess(config: string, port: number): NatsProcess {
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const running = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null;
  return {
    async start() {
      await exited;
      const proc = spawn(NATS_SERVER, ['-c', config], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      proc.stderr?.on('data', (chunk: Buffer) => {
        stderr = (stderr + chunk.toString()).slice(-4000);
      });
      exited = new Promise((resolve) => proc.once('exit', () => resolve()));
      child = proc;
      const deadline = Date.now() + scaled(START_TIMEOUT_MS);
      while (!(await canConnect('127.0.0.1', port, scaled(200)))) {
        if (proc.exitCode !== null || Date.now() > deadline) {
          proc.kill('SIGKILL');
          throw new Error(`nats-server did not start on port ${port}:\n${stderr}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    signal(name) {
      if (running()) child!.kill(name);
    },
    exited: () => exited,
    pid: () => (running() ? child!.pid : undefined),
  };
}

export function hasNatsServerBinary(): boolean {
  return existsSync(NATS_SERVER);
}

export function serverVersionAtLeast([major, minor]: [number, number]): boolean {
  const out = spawnSync(NATS_SERVER, ['--version'], { encoding: 'utf8' }).stdout ?? '';
  const match = /v(\d+)\.(\d+)/.exec(out);
  if (!match) return false;
  const [have, haveMinor] = [Number(match[1]), Number(match[2])];
  return have > major || (have === major && haveMinor >= minor);
}

export { canConnect, isStopped };
