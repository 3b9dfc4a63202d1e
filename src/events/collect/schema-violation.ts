/** The answer to a request that failed its schema and went to quarantine (SPEC 4.3). */
import { AppError, type ProblemDetail } from '../../core/errors.js';
import { isObject } from './to-log-entry.js';

/** The reasons are shown only to a client that asked with context.debug=true; the rest are told where to look. */
export function schemaViolation(org: string, body: unknown, errors: ProblemDetail[]): AppError {
  if (debugRequested(body)) return new AppError('schema_violation', 'The event does not match the schema.', { members: { errors } });
  return new AppError(
    'schema_violation',
    'The event was rejected and kept in quarantine. Send it with context.debug=true to see the reasons, ' +
      `or list them with GET /admin/v1/orgs/${org}/quarantine.`,
  );
}

function debugRequested(body: unknown): boolean {
  return isObject(body) && isObject(body.context) && body.context.debug === true;
}
