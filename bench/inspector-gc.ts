/**
 * A full garbage collection in a child process, for memory figures that count live objects rather
 * than whatever garbage the last requests left. The child is started with `--inspect-port=0`, which
 * opens nothing; SIGUSR1 makes Node open its inspector on a free port (it prints the WebSocket URL to
 * stderr, which goes to the child's log), and the DevTools protocol's HeapProfiler.collectGarbage runs
 * a full GC. The session is closed afterwards; with no session attached the inspector costs nothing
 * measurable.
 */
import { readFileSync } from 'node:fs';
import { WebSocket } from 'undici';
import type { Child } from './procs.js';

/** Node flag for Child.start, so that SIGUSR1 opens the inspector on a free port (not 9229). */
export const INSPECT_ON_SIGNAL = '--inspect-port=0';

function inspectorUrl(logFile: string): string | undefined {
  const text = readFileSync(logFile, 'utf8');
  const all = [...text.matchAll(/Debugger listening on (ws:\/\/\S+)/g)];
  return all.length ? all[all.length - 1]![1] : undefined;
}

export async function collectGarbage(child: Child, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let url = inspectorUrl(child.logFile);
  if (!url) {
    process.kill(child.pid, 'SIGUSR1');
    while (!(url = inspectorUrl(child.logFile))) {
      if (Date.now() > deadline) throw new Error(`${child.name}: no inspector URL in its log after SIGUSR1`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const ws = new WebSocket(url);
  try {
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error(`${child.name}: cannot connect to its inspector`));
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${child.name}: HeapProfiler.collectGarbage timed out`)), Math.max(1, deadline - Date.now()));
      ws.onmessage = (message) => {
        const reply = JSON.parse(String(message.data)) as { id?: number; error?: { message: string } };
        if (reply.id !== 1) return;
        clearTimeout(timer);
        if (reply.error) reject(new Error(`${child.name}: collectGarbage: ${reply.error.message}`));
        else resolve();
      };
      ws.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' }));
    });
  } finally {
    ws.close();
  }
}
