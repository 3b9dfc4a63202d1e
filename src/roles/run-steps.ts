/** Runs every step even when one fails (so each resource is released); throws the first failure. */
export async function runSteps(steps: Array<() => unknown>): Promise<void> {
  let failure: unknown;
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure !== undefined) throw failure;
}
