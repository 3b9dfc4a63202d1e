/**
 * Starts a worker thread whose entry module sits next to the caller (`entry` without extension).
 * Under tsx (tests, `node --import tsx`) the caller is TypeScript and so is the entry; Node 20 does not
 * carry tsx's loader into worker threads, so that worker registers it first. From built JS the entry is
 * the compiled `.js` file.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

export function spawnWorker(callerUrl: string, entry: string, options: WorkerOptions = {}): Worker {
  if (!callerUrl.endsWith('.ts')) return new Worker(new URL(`${entry}.js`, callerUrl), options);
  const href = JSON.stringify(new URL(`${entry}.ts`, callerUrl).href);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  return new Worker(`import(${tsx}).then((tsx) => { tsx.register(); return import(${href}); })`, { ...options, eval: true });
}
