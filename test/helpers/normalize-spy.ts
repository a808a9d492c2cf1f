import { vi } from 'vitest';

/**
 * The longest text any one `normalize` call returns while `work` runs: what one step decomposes at once (a step's cost
 * grows with it; 294,912 units took 260-300 ms), counted rather than timed so a loaded machine cannot blur it.
 */
export async function longestNormalized(work: () => Promise<unknown>): Promise<number> {
  // The original, called with its string below.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const original = String.prototype.normalize;
  let longest = 0;
  const spy = vi.spyOn(String.prototype, 'normalize').mockImplementation(function (this: string, form?: string) {
    const normalized = original.call(this, form);
    longest = Math.max(longest, normalized.length);
    return normalized;
  });
  try {
    await work();
  } finally {
    spy.mockRestore();
  }
  return longest;
}
