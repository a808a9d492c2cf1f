import { describe, expect, it } from 'vitest';
import { diversify } from '../../../src/retrieval/diversify.js';
import { fakeCorpus, labels, scored } from './fake-corpus.js';

const corpus = fakeCorpus([
  { docId: 'a', ordinal: 0, text: '', vector: [1, 0, 0] },
  { docId: 'a', ordinal: 1, text: '', vector: [0.99, 0.1, 0] }, // a near-duplicate of label 0
  { docId: 'b', ordinal: 0, text: '', vector: [0, 1, 0] },
  { docId: 'c', ordinal: 0, text: '', vector: [0, 0, 1] },
]);
const RANKED = () => scored([0, 1], [1, 0.95], [2, 0.9], [3, 0.5]);
const signal = new AbortController().signal;

describe('§7.7 mmr stage', () => {
  it.each([
    { lambda: 1, picks: 4, order: [0, 1, 2, 3] }, // relevance only
    { lambda: 0.5, picks: 4, order: [0, 2, 3, 1] }, // the near-duplicate falls behind
    { lambda: 0.5, picks: 2, order: [0, 2, 1, 3] }, // only the picks a page needs; the rest keep their order
  ])('λ $lambda with $picks picks orders $order', async ({ lambda, picks, order }) => {
    expect(labels(await diversify(RANKED(), picks, lambda, corpus, signal))).toEqual(order);
  });

  it('keeps each candidate as it was (score and scores), only reordered', async () => {
    const ranked = RANKED();
    const out = await diversify(ranked, 4, 0.5, corpus, signal);
    expect(new Set(out)).toEqual(new Set(ranked));
  });

  it('a candidate deleted since recall (no vector) still takes part', async () => {
    const gone = fakeCorpus([{ docId: 'a', ordinal: 0, text: '', vector: [1, 0] }], {}, new Set([0]));
    expect(labels(await diversify(scored([0, 1]), 1, 0.5, gone, signal))).toEqual([0]);
  });
});
