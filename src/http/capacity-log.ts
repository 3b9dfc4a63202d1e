/**
 * A 503 the service answers on purpose (an AppError: sandbox_busy, sandbox_paused, storage_unavailable,
 * org_unavailable, log_unavailable…, each with Retry-After) is the service working as documented, not a
 * failure: it is logged at warn, without a stack, and once per change — when an org starts getting that
 * answer — not once per request (a client retrying every second would write a line a second, and an
 * operator alerting on errors was paged for each). The answer goes on until QUIET_MS pass without it;
 * the next one is a change again, and its line says how many answers the last stretch had.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../core/context.js';
import { AppError } from '../core/errors.js';

/** A minute without a given answer ends its stretch: the next one is logged again. */
const QUIET_MS = 60_000;
/** Stretches remembered at most (code × org); the oldest are dropped first. */
const KEPT = 1000;

interface Stretch {
  last: number;
  count: number;
}

export interface CapacityLine {
  code: string;
  org: string | undefined;
  detail: string | undefined;
  /** Answers of this code to this org in its last stretch, logged or not. */
  previousStretch: number | undefined;
}

export class CapacityLog {
  private readonly stretches = new Map<string, Stretch>();

  constructor(private readonly clock: Clock) {}

  /** Counts the answer; returns the line to log when it starts a stretch, else undefined. */
  answered(error: AppError, org: string | undefined): CapacityLine | undefined {
    const key = `${error.code}\u0000${org ?? ''}`;
    const now = this.clock.now();
    const stretch = this.stretches.get(key);
    if (stretch && now - stretch.last <= QUIET_MS) {
      stretch.last = now;
      stretch.count++;
      return undefined;
    }
    this.stretches.delete(key);
    this.stretches.set(key, { last: now, count: 1 });
    if (this.stretches.size > KEPT) this.stretches.delete(this.stretches.keys().next().value!);
    return { code: error.code, org, detail: error.detail, previousStretch: stretch?.count };
  }
}

/**
 * `logger` for background work (flow runs, step passes, deferred and scheduled sends): an error line
 * whose `err` is one of those documented 503s — an org unavailable until an operator repairs it, the
 * storage process restarting — is the same condition the answers report, not a new failure each tick:
 * it goes to warn without a stack, once per stretch per org and code, as the answers' lines do. Every
 * other error line is logged as it was.
 */
export function capacityErrorsAtWarn(logger: FastifyBaseLogger, clock: Clock): FastifyBaseLogger {
  const capacity = new CapacityLog(clock);
  const wrapped: FastifyBaseLogger = Object.create(logger);
  wrapped.error = ((fields: unknown, message?: string) => {
    const { err, org } = (typeof fields === 'object' && fields !== null ? fields : {}) as { err?: unknown; org?: unknown };
    if (!(err instanceof AppError) || err.status !== 503) return (logger.error as (...args: unknown[]) => void)(fields, message);
    const line = capacity.answered(err, typeof org === 'string' ? org : undefined);
    if (line) logger.warn({ ...line, work: message }, 'background work waits on a 503 condition (logged once until a minute passes without it)');
  }) as FastifyBaseLogger['error'];
  return wrapped;
}
