/**
 * Writes to control documents as compare-and-set loops: read the stored document, compute the next one
 * (which may refuse by throwing an AppError), write it at the revision read; when another process wrote
 * in between, read again. An unreachable control plane answers 503 and says the change may have been made.
 */
import { AppError } from '../core/errors.js';
import { type ControlDocuments, type ControlEntry, ControlConflictError, ControlUnavailableError } from './types.js';

/**
 * Every round of a race lets one writer through, so N writers racing on one document need at most N
 * rounds; admin calls on one org's document never come near 100 at once.
 */
const MAX_ATTEMPTS = 100;

export async function changeDocument<T>(
  control: ControlDocuments,
  key: string,
  change: (current: T | undefined) => T,
): Promise<ControlEntry> {
  for (let attempt = 1; ; attempt++) {
    const current = await answered(() => control.get(key));
    const next = change(current?.value as T | undefined);
    try {
      return await answered(() => (current ? control.update(key, next, current.revision) : control.create(key, next)));
    } catch (error) {
      if (!(error instanceof ControlConflictError) || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
}

/** Creates a document; `ControlConflictError` when it exists. */
export function createDocument(control: ControlDocuments, key: string, value: unknown): Promise<ControlEntry> {
  return answered(() => control.create(key, value));
}

async function answered<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof ControlUnavailableError)) throw error;
    throw new AppError('control_unavailable', 'the control plane (NATS KV) is out of reach; the change may or may not have been made: read it back, then retry', {
      headers: { 'Retry-After': '1' },
    }, { cause: error });
  }
}
