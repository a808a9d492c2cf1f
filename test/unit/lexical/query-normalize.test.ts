import { describe, expect, it } from 'vitest';
import { Bm25Index } from '../../../src/lexical/bm25.js';
import {
  normalizeQuery,
  normalizeQueryInSlices,
  rewriteQuery,
} from '../../../src/lexical/query-transform.js';
import type { TimeSlice } from '../../../src/protocol/time-slice.js';
import { longestNormalized } from '../../helpers/normalize-spy.js';

const slice = { due: () => Promise.resolve() } as unknown as TimeSlice;

const TRICKY = ['a', 'e', '\u0301', 'ﬁ', '\ufdfa', '😀', ' ', '  ', '\t', '\u200b', '\u0000', '\u00a0', 'Σ', '가', '.'];

describe('query normalisation (§7.8 rewrite) in bounded parts', () => {
  it('gives what normalising the whole query gives, for random queries across many parts', async () => {
    let seed = 11;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 40; round++) {
      const length = Math.floor(random() * 3000);
      const query = Array.from({ length }, () => TRICKY[Math.floor(random() * TRICKY.length)]).join('');
      expect(await normalizeQueryInSlices(query, slice)).toBe(normalizeQuery(query));
    }
  });

  it('rewrite of 16,384 × U+FDFA normalises in parts of bounded length, not 295 Ki units at once', async () => {
    const index = new Bm25Index({ k1: 1.2, b: 0.75, stem: true });
    index.add(1, 'an ordinary document');
    const query = '\ufdfa'.repeat(16_384);
    let rewritten = '';
    const longest = await longestNormalized(
      async () => (rewritten = await rewriteQuery(query, index, () => [], slice)),
    );
    expect(rewritten).toBe(normalizeQuery(query));
    // Before: one NFKC of the whole query, 294,912 units (42 ms here, and it grows faster than the text).
    expect(longest).toBeLessThanOrEqual(1024 * 18);
  });
});
