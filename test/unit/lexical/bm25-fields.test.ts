import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Bm25Index } from '../../../src/lexical/bm25.js';

const plain = { k1: 1.2, b: 0.75, stem: false };

const word = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'b', 'c') },
  { weight: 3, arbitrary: fc.constantFrom('d', 'e', 'f', 'g') },
  { weight: 1, arbitrary: fc.constantFrom('h', 'i', 'j', 'k', 'l') },
);

describe('BM25F fields (index.bm25.fields)', () => {
  it('a field of integer weight w scores as its text repeated w times in the document, to the bit', async () => {
    const fielded = new Bm25Index({ ...plain, fields: { title: 2 } });
    const repeated = new Bm25Index(plain);
    const docs = [
      ['heart attack risk', 'aspirin lowers the risk of a second heart attack in adults'],
      ['aspirin and bleeding', 'bleeding is a known side effect of daily aspirin'],
      ['', 'statins lower cholesterol and the risk of heart disease'],
    ] as const;
    docs.forEach(([title, text], label) => {
      fielded.add(label, text, title === '' ? {} : { title });
      repeated.add(label, title === '' ? text : `${text} ${title} ${title}`);
    });
    for (const query of ['heart attack', 'aspirin risk', 'bleeding cholesterol']) {
      expect(await fielded.search(query, 2)).toEqual(await repeated.search(query, 2));
      expect(await fielded.searchExhaustive(query, 3)).toEqual(await repeated.searchExhaustive(query, 3));
    }
    expect(fielded.termCounts(0)).toEqual(repeated.termCounts(0));
  });

  it('fractional weights: pruned equals exhaustive, and removals leave what a fresh index holds (fuzzed)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.array(word, { maxLength: 4 }), fc.array(word, { maxLength: 12 })), {
          minLength: 1,
          maxLength: 60,
        }),
        fc.array(fc.nat(), { maxLength: 20 }),
        fc.array(word, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 20 }),
        fc.constantFrom(0.5, 1.3, 1.5, 2.75),
        async (corpus, removals, query, k, weight) => {
          const options = { ...plain, fields: { title: weight } };
          const index = new Bm25Index(options);
          corpus.forEach(([title, text], label) => index.add(label, text.join(' '), { title: title.join(' ') }));
          const removed = new Set(removals.map((r) => r % corpus.length));
          for (const label of removed) index.remove(label);
          const fresh = new Bm25Index(options);
          corpus.forEach(([title, text], label) => {
            if (!removed.has(label)) fresh.add(label, text.join(' '), { title: title.join(' ') });
          });
          const text = query.join(' ');
          const pruned = await index.search(text, k);
          expect(pruned).toEqual(await index.searchExhaustive(text, k));
          expect(pruned).toEqual(await fresh.search(text, k));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('reads strings and arrays of strings; other values, unnamed fields and weight 0 add nothing', async () => {
    const index = new Bm25Index({ ...plain, fields: { title: 1, tags: 1, off: 0 } });
    index.add(1, 'body', { title: 'alpha', tags: ['beta', 7, 'gamma'], off: 'delta', other: 'epsilon' });
    index.add(2, 'body', { title: 42 });
    expect(index.termCounts(1)).toEqual({
      counts: new Map([
        ['body', 1],
        ['alpha', 1],
        ['beta', 1],
        ['gamma', 1],
      ]),
      length: 4,
    });
    expect(index.termCounts(2)).toEqual({ counts: new Map([['body', 1]]), length: 1 });
    expect(await index.search('delta epsilon', 2)).toEqual([]);
  });

  it('without fields configured, metadata is not indexed', async () => {
    const index = new Bm25Index(plain);
    index.add(1, 'body', { title: 'alpha' });
    expect(await index.search('alpha', 1)).toEqual([]);
  });
});
