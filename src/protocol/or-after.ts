/**
 * `work`'s outcome, or `late()`'s once `ms` have passed first (its value, or its throw as the rejection); the timer
 * is cleared either way, and `work` is left to settle unheard. For waits that must not outlast a bound: a corpus
 * opening, a database that hangs, a gateway member that does not answer.
 */
export function orAfter<T, U>(work: Promise<T>, ms: number, late: () => U): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  // Resolved with a promise of `late()`: a throw there becomes this one's rejection.
  const waited = new Promise<U>((resolve) => (timer = setTimeout(() => resolve(Promise.resolve().then(late)), ms)));
  return Promise.race([work, waited]).finally(() => clearTimeout(timer));
}
