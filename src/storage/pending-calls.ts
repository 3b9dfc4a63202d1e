/**
 * The calls in flight to the storage process, each waiting for its reply by id; a reply's error gets
 * back the class callers tell apart.
 */
import { SandboxBusy } from '../db/untrusted.js';
import { OrgUnavailable } from '../core/unavailable.js';
import { OrgDeletedError } from './org-files.js';
import type { FromStorage, WireError } from './storage-protocol.js';

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

export class PendingCalls {
  private nextId = 1;
  private pending = new Map<number, Pending>();

  /** A new call: `send` posts it with its id; the promise settles with its reply. */
  open<T>(send: (id: number) => void): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      send(id);
    });
  }

  reply(message: Extract<FromStorage, { type: 'reply' }>): void {
    const waiting = this.pending.get(message.id);
    this.pending.delete(message.id);
    if (message.ok) waiting?.resolve(message.value);
    else waiting?.reject(rebuildError(message.error));
  }

  /** Every call in flight fails with `error` (its process ended). */
  failAll(error: Error): void {
    const pending = this.pending;
    this.pending = new Map();
    for (const waiting of pending.values()) waiting.reject(error);
  }
}

/** Errors cross the process boundary as name and message; the ones callers tell apart get their class back. */
function rebuildError(error: WireError): Error {
  switch (error.name) {
    case 'SandboxBusy':
      return new SandboxBusy(error.message);
    case 'OrgUnavailable':
      return new OrgUnavailable(error.slug ?? '', error.reason ?? error.message);
    case 'OrgDeletedError':
      return new OrgDeletedError(error.slug ?? '');
    default:
      return Object.assign(new Error(error.message), { name: error.name });
  }
}
