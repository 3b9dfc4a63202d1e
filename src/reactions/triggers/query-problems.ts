/**
 * How a query's refusal or failure answers a preview, a diff or a simulation. A query that used up its
 * budget (TRIGGER_TIMEOUT_MS, or its org's memory share) gets a verdict naming that budget,
 * `query_budget_exceeded` (422): sending it again gets the same answer, so it is never told to retry.
 * Capacity answers (SandboxBusy, SandboxPaused: 503) pass through these untouched.
 */
import { AppError } from '../../core/errors.js';
import type { QueryFailed } from './sandbox.js';
import type { QueryBudget, SqlRefused } from './sql-guard.js';

const FIX: Record<QueryBudget, string> = {
  time: 'make it cheaper (filter on event_type and the window before costly expressions; no huge constants) or narrow the window',
  memory: "make it need less memory (no huge constants or lists; fewer rows per group), or raise DUCKDB_MEMORY_LIMIT: an org's share is it divided by ORG_DATABASES_MAX_OPEN",
};

export function budgetProblem(reason: string, budget: QueryBudget): AppError {
  return new AppError('query_budget_exceeded', `${reason}; ${FIX[budget]}`, { members: { budget, reason } });
}

/** A refusal of the checks: invalid_trigger, or query_budget_exceeded when the check used up a budget. */
export function refusedProblem(error: SqlRefused): AppError {
  return error.budget ? budgetProblem(error.reason, error.budget) : new AppError('invalid_trigger', error.reason, { members: { reason: error.reason } });
}

/** A failure while running: trigger_query_failed, or query_budget_exceeded when it ran out of time or memory. */
export function failedProblem(error: QueryFailed): AppError {
  return error.budget ? budgetProblem(error.reason, error.budget) : new AppError('trigger_query_failed', error.reason);
}
