/** The answer to a request that failed its schema and went to quarantine (SPEC 4.3, issue 40). */
import { AppError, type ProblemDetail } from '../../core/errors.js';
import { isObject } from './to-log-entry.js';

/** Reasons an answer carries without context.debug: enough to fix the usual mistake, bounded in size. */
export const FIRST_REASONS = 3;

/**
 * Every answer says why: the first FIRST_REASONS reasons (JSON pointer and message) in `errors` and the
 * first in `detail`; a client that asked with context.debug=true gets every reason. The quarantine keeps
 * them all, for the org's admins.
 */
export function schemaViolation(org: string, body: unknown, errors: ProblemDetail[]): AppError {
  const first = errors[0];
  const reason = first ? `${first.path || '/'} ${first.message}` : 'it does not match the schema';
  if (debugRequested(body)) return new AppError('schema_violation', `The event does not match the schema: ${reason}.`, { members: { errors } });
  const more = errors.length > 1 ? ` (${errors.length} reasons; the first ${Math.min(errors.length, FIRST_REASONS)} are in errors)` : '';
  return new AppError(
    'schema_violation',
    `The event was rejected and kept in quarantine: ${reason}${more}. Send it with context.debug=true to see every reason, ` +
      `or list them with GET /admin/v1/orgs/${org}/quarantine.`,
    { members: { errors: errors.slice(0, FIRST_REASONS) } },
  );
}

function debugRequested(body: unknown): boolean {
  return isObject(body) && isObject(body.context) && body.context.debug === true;
}
