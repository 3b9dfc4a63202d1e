/**
 * A capacity answer — 503 with Retry-After and code `sandbox_busy` or `storage_unavailable` — is the
 * documented contract of a busy service (docs/operators.md): try again later. A client waits Retry-After
 * and sends again; so does a test whose subject is not capacity, within a scaled deadline. This is the
 * client's contract, not a retried test: any other answer is returned at once. Only for idempotent
 * requests (a PUT, a read): a change answered `storage_unavailable` may or may not have been made.
 */
import { scaled } from './deadline.js';

const CAPACITY_CODES = new Set(['sandbox_busy', 'storage_unavailable']);

/** An answer of app.inject() or of fetch(). */
type Answer = { statusCode: number; headers: Record<string, string | string[] | number | undefined>; body: string } | Response;

async function capacityCode(res: Answer): Promise<string | undefined> {
  if ((res instanceof Response ? res.status : res.statusCode) !== 503) return undefined;
  try {
    // A fetch() body is read from a clone: the caller reads the answer it is given.
    const code = (JSON.parse(res instanceof Response ? await res.clone().text() : res.body) as { code?: unknown }).code;
    return typeof code === 'string' && CAPACITY_CODES.has(code) ? code : undefined;
  } catch {
    return undefined;
  }
}

/** Sends until the answer is not a capacity refusal, waiting Retry-After between; the last answer after the deadline. */
export async function asClientRetries<R extends Answer>(send: () => Promise<R>, { timeoutMs = 60_000 } = {}): Promise<R> {
  const deadline = Date.now() + scaled(timeoutMs);
  for (;;) {
    const res = await send();
    if ((await capacityCode(res)) === undefined || Date.now() > deadline) return res;
    const seconds = Number(res instanceof Response ? res.headers.get('retry-after') : res.headers['retry-after']);
    await new Promise((resolve) => setTimeout(resolve, Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1000));
  }
}
