/**
 * The storage process as its client (storage-client.ts) sees it, one generation after another, and
 * what a call or health check is told while it is not up.
 */
import type { ChildProcess } from 'node:child_process';

export type State =
  | { kind: 'starting'; child: ChildProcess; generation: number; startedAt: number }
  | { kind: 'up'; child: ChildProcess; generation: number; startedAt: number }
  /** Killed by us and not gone yet: new calls wait for the next process. */
  | { kind: 'stopping'; child: ChildProcess; generation: number; startedAt: number }
  | { kind: 'down'; reason: string; generation: number }
  | { kind: 'closed' };

/** `lastDownReason`: why the previous process ended; `killReason`: why we are stopping this one. */
export function describeState(state: State, lastDownReason: string | undefined, killReason: string | undefined): string {
  switch (state.kind) {
    case 'down':
      return state.reason;
    case 'starting':
      return `a new storage process is starting after: ${lastDownReason ?? 'start'}`;
    case 'stopping':
      return `it is being stopped: ${killReason ?? 'killed'}`;
    case 'up':
      return 'running';
    case 'closed':
      return 'the service is shutting down';
  }
}
