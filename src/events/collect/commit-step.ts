/**
 * Collect step 3, accepted: the entries are written to the log, and the client is answered only once they
 * are durable (SPEC 4.3). A write that was sent but not confirmed may be stored, so its answer says how to
 * retry so that dedupe recognises the retry (the same messageIds).
 */
import { AppError } from '../../core/errors.js';
import { type Metrics, seriesBy } from '../../ops/metrics.js';
import type { GroupCommitter } from '../log/group-commit.js';
import { LogOutcomeUnknownError, LogUnavailableError } from '../log/types.js';
import type { Accepted, CollectAnswer } from './accepted.js';
import { logUnavailable } from './log-unavailable.js';
import { type Ok, ok, type Stop, stop } from './outcome.js';

export function createCommitStep(log: GroupCommitter, metrics: Metrics): (accepted: Accepted) => Promise<Ok<CollectAnswer> | Stop> {
  const accepted = seriesBy((environment) => metrics.eventsAccepted.labels(environment));
  return async function commitStep({ who, entries, answer }) {
    try {
      await log.commitEntries(entries);
    } catch (error) {
      if (error instanceof LogUnavailableError) return stop(logUnavailable(error));
      if (error instanceof LogOutcomeUnknownError) return stop(unconfirmed(answer, error));
      throw error;
    }
    accepted(who.environment).inc(entries.length);
    return ok(answer);
  };
}

function unconfirmed(answer: CollectAnswer, cause: unknown): AppError {
  if ('messageId' in answer) {
    return new AppError(
      'log_outcome_unknown',
      `The event log did not confirm the write in time: the event may be stored. Retry with "messageId": "${answer.messageId}" ` +
        '(a retry with the same messageId within 24 h is stored once).',
      { headers: { 'Retry-After': '1' }, members: { messageId: answer.messageId } },
      { cause },
    );
  }
  return new AppError(
    'log_outcome_unknown',
    'The event log did not confirm the write in time: the batch may be stored. Retry it with each member\'s ' +
      'messageId set to the one at its position in messageIds (a retry with the same messageIds within 24 h is stored once).',
    { headers: { 'Retry-After': '1' }, members: { messageIds: answer.messageIds } },
    { cause },
  );
}
