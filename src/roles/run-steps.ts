/** Steps under way now, by their source (`() => storage.compaction?.stop()`): what a slow close waits for. */
const inProgress = new Set<{ step: string }>();

/** The steps runSteps is waiting for now, in any app of this process (a shutdown past its timeout logs them). */
export function stepsInProgress(): string[] {
  return [...inProgress].map((entry) => entry.step);
}

/** Runs every step even when one fails (so each resource is released); throws the first failure. */
export async function runSteps(steps: Array<() => unknown>): Promise<void> {
  let failure: unknown;
  for (const step of steps) {
    const entry = { step: String(step).replace(/\s+/g, ' ').slice(0, 200) };
    inProgress.add(entry);
    try {
      await step();
    } catch (error) {
      failure ??= error;
    } finally {
      inProgress.delete(entry);
    }
  }
  if (failure !== undefined) throw failure;
}
