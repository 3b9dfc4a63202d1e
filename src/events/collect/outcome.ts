/**
 * What a collect step hands on (the *-step.ts files beside this one; routes/http/collect.ts composes them):
 * `ok` with the value the next step takes, `stop` with the problem the client is answered, or `quarantine`:
 * the entries go to the log as rejected events, then the client is answered the problem. Expected outcomes
 * of a request are values; a thrown error is a fault of the service (500).
 */
import type { AppError } from '../../core/errors.js';
import type { LogEntry } from '../log/types.js';

export interface Ok<T> {
  readonly kind: 'ok';
  readonly value: T;
}

export interface Stop {
  readonly kind: 'stop';
  readonly problem: AppError;
}

/** Rejected: kept in quarantine (written to the log first) even though the client only sees `problem`. */
export interface Quarantine {
  readonly kind: 'quarantine';
  readonly entries: LogEntry[];
  readonly problem: AppError;
}

export type Outcome<T> = Ok<T> | Stop | Quarantine;

export function ok<T>(value: T): Ok<T> {
  return { kind: 'ok', value };
}

export function stop(problem: AppError): Stop {
  return { kind: 'stop', problem };
}

export function quarantine(entries: LogEntry[], problem: AppError): Quarantine {
  return { kind: 'quarantine', entries, problem };
}
