/**
 * A file that runs into tap's timeout says only "timeout!". Shortly before it, this writes to stderr what
 * the process still waits for: the test apps whose close has not ended, the close steps under way
 * (runSteps), and Node's active resources, so a hang seen once in CI can be told from the log.
 */
import { stepsInProgress } from '../../src/roles/run-steps.js';
import { TEST_TIME_SCALE } from './deadline.js';

const closing = new Map<number, { since: number; what: string }>();
const awaited = new Map<number, { since: number; what: string; detail: (() => string) | undefined }>();
let armed = false;
let next = 0;

/** Marks an app's close as under way until the returned function is called. */
export function closeStarted(what: string): () => void {
  const id = next++;
  closing.set(id, { since: performance.now(), what });
  return () => closing.delete(id);
}

/**
 * Awaits `promise`, named in the hang report while it is pending (with `detail()` as it stands then):
 * for a file whose body, not its close, has hung once in CI.
 */
export async function awaiting<T>(what: string, promise: Promise<T>, detail?: () => string): Promise<T> {
  const id = next++;
  awaited.set(id, { since: performance.now(), what, detail });
  try {
    return await promise;
  } finally {
    awaited.delete(id);
  }
}

/** Arms the report once per file, 20 s before the file's timeout (package.json "timeout" × TEST_TIME_SCALE). */
export function armHangReport(): void {
  const seconds = Number(process.env.TAP_TIMEOUT);
  if (armed || !(seconds > 20)) return;
  armed = true;
  const atMs = (seconds - 20) * 1000 * TEST_TIME_SCALE - process.uptime() * 1000;
  setTimeout(() => {
    const now = performance.now();
    const lines = [
      `hang report, ${Math.round(process.uptime())} s into ${process.argv[1] ?? 'this file'}:`,
      ...[...closing.values()].map((c) => `  close of ${c.what} under way for ${Math.round((now - c.since) / 1000)} s`),
      ...stepsInProgress().map((step) => `  close step under way: ${step}`),
      ...[...awaited.values()].map((a) => `  awaiting ${a.what} for ${Math.round((now - a.since) / 1000)} s${a.detail ? `: ${a.detail()}` : ''}`),
      `  active resources: ${JSON.stringify(countOf(process.getActiveResourcesInfo()))}`,
    ];
    process.stderr.write(lines.join('\n') + '\n');
  }, Math.max(0, atMs)).unref();
}

function countOf(names: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of names) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}
