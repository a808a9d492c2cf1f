import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Bm25Index } from '../../../src/lexical/bm25.js';

describe('BM25 index', () => {
  const options = { k1: 1.2, b: 0.75, stem: true };

  it('ranks by BM25 with accent/case folding and stemming, and forgets removed documents', async () => {
    const index = new Bm25Index(options);
    index.add(1, 'Café owners RUNNING cafés');
    index.add(2, 'the dog runs');
    index.add(3, 'nothing relevant here');
    expect((await index.search('cafe run', 10)).map((hit) => hit.label)).toEqual([1, 2]);
    index.remove(1);
    expect(await index.search('cafe', 10)).toEqual([]);
    expect(index.size).toBe(2);
  });

  it('top-k selection equals a full sort, ties by smaller label (fuzzed)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { maxLength: 6 }), { maxLength: 60 }),
        fc.integer({ min: 1, max: 70 }),
        async (docs, k) => {
          const index = new Bm25Index(options);
          docs.forEach((words, label) => index.add(label, words.join(' ')));
          const all = await index.search('a b c', Number.MAX_SAFE_INTEGER);
          expect(await index.search('a b c', k)).toEqual(all.slice(0, k));
          for (let i = 1; i < all.length; i++) {
            const [x, y] = [all[i - 1]!, all[i]!];
            expect(x.score > y.score || (x.score === y.score && x.label < y.label)).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('scores a query over hundreds of thousands of postings in time slices, letting the event loop turn', async () => {
    const index = new Bm25Index(options);
    const words = Array.from({ length: 40 }, (_, i) => `w${i.toString(36)}`);
    for (let label = 0; label < 20_000; label++)
      index.add(label, words.filter((_, i) => (label + i) % 4 !== 0).join(' '));
    let turns = 0;
    const timer = setInterval(() => (turns += 1), 0);
    const hits = await index.search(words.join(' '), 10);
    clearInterval(timer);
    expect(hits).toHaveLength(10);
    expect(turns).toBeGreaterThan(0);
  });
});
