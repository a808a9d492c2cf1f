import { describe, expect, it } from 'vitest';
import { ChunkCache } from '../../../src/corpus/chunk-cache.js';

const chunk = (label: number, text: string) => ({
  label,
  docId: `d${label}`,
  ordinal: 0,
  text,
  context: '',
  start: 0,
  end: 1,
});

describe('chunk cache', () => {
  it('stays within its bytes, dropping the least recently used first', () => {
    const cache = new ChunkCache(4096);
    for (let label = 0; label < 100; label++) {
      cache.keep(chunk(label, 'x'.repeat(500)));
      cache.get(0); // kept in use
      expect(cache.bytes).toBeLessThanOrEqual(4096);
    }
    expect(cache.get(0)?.label).toBe(0);
    expect(cache.get(99)?.label).toBe(99);
    expect(cache.get(1)).toBeUndefined();
  });

  it('does not keep a chunk larger than the whole budget, but still returns it', () => {
    const cache = new ChunkCache(1024);
    const big = chunk(1, 'y'.repeat(2048));
    expect(cache.keep(big)).toBe(big);
    expect(cache.get(1)).toBeUndefined();
    expect(cache.keep(undefined)).toBeUndefined();
    expect(cache.bytes).toBe(0);
  });
});
