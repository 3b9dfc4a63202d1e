import { AppError } from '../../core/errors.js';

/** The log certainly stored nothing (LogUnavailableError): the client retries as it is (SPEC 4.3). */
export function logUnavailable(cause: unknown): AppError {
  return new AppError('log_unavailable', 'The event log is unavailable; nothing was stored. Retry.', { headers: { 'Retry-After': '1' } }, { cause });
}
