/** Questions tests ask of servers they run: does the port accept connections, is the process stopped. */
import { readdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';

export function canConnect(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Every thread of the process is stopped (state T in /proc/<pid>/task/<tid>/stat). */
export function isStopped(pid: number): boolean {
  try {
    return readdirSync(`/proc/${pid}/task`).every((tid) => /^\d+ \(.*\) T /.test(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')));
  } catch {
    return false;
  }
}
