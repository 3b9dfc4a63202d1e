/** `promise`, or `late()` thrown when it has not settled within `ms`; the timer is cleared either way. */
export function withDeadline<T>(promise: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(late()), ms)));
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
