/**
 * Collect step 3, rejected: the rejected entries are written to the log before the client hears why, so
 * every rejection is kept in quarantine (SPEC 4.3) although the client only sees the problem.
 */
import { AppError } from '../../core/errors.js';
import type { GroupCommitter } from '../log/group-commit.js';
import { LogOutcomeUnknownError, LogUnavailableError } from '../log/types.js';
import { logUnavailable } from './log-unavailable.js';
import { type Quarantine, type Stop, stop } from './outcome.js';

export function createQuarantineStep(log: GroupCommitter): (rejected: Quarantine) => Promise<Stop> {
  return async function quarantineStep({ entries, problem }) {
    try {
      await log.commitEntries(entries);
    } catch (error) {
      if (error instanceof LogUnavailableError) return stop(logUnavailable(error));
      if (error instanceof LogOutcomeUnknownError) return stop(unconfirmed(error));
      throw error;
    }
    return stop(problem);
  };
}

function unconfirmed(cause: unknown): AppError {
  return new AppError(
    'log_outcome_unknown',
    'The event log did not confirm the write in time; the rejected request may have been recorded in quarantine. Retry it.',
    { headers: { 'Retry-After': '1' } },
    { cause },
  );
}
