/**
 * Side effects that tests control: the clock and randomness.
 * Passed down from server.ts / test helpers; nothing else reads Date.now() for domain time.
 */
import { randomBytes } from 'node:crypto';

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export interface Context {
  clock: Clock;
  randomBytes(size: number): Buffer;
}

export const systemClock: Clock = { now: () => Date.now() };

export function createContext(overrides: Partial<Context> = {}): Context {
  return { clock: systemClock, randomBytes, ...overrides };
}

/** A clock tests move by hand (crossing the 7-day identity window without waiting). */
export class ManualClock implements Clock {
  constructor(private current: number = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}
