import { describe, expect, it } from 'vitest';
import type { Encoder } from '../../../src/models/index.js';
import { TimeSlice } from '../../../src/protocol/time-slice.js';
import { bodyOf } from '../../../src/retrieval/hits.js';
import { packTokenBudget } from '../../../src/retrieval/packing.js';
import type { Scored } from '../../../src/retrieval/ranking.js';
import type { Unit } from '../../../src/retrieval/retrieve-options.js';
import { fakeCorpus, labels, scored } from './fake-corpus.js';

/** Chunks of 3, 5 and 2 words; document d1 holds 10 words in all. */
const corpus = fakeCorpus(
  [
    { docId: 'd1', ordinal: 0, text: 'one two three' },
    { docId: 'd1', ordinal: 1, text: 'four five six seven eight' },
    { docId: 'd2', ordinal: 0, text: 'nine ten' },
  ],
  { d1: { text: 'one two three four five six seven eight nine ten' } },
);
/** One token per word. */
const counted: string[] = [];
const encoder: Pick<Encoder, 'tokenCount'> = {
  tokenCount: (text) => (counted.push(text), Promise.resolve(text.split(' ').filter(Boolean).length)),
};
const PAGE = () => scored([0, 0.9], [1, 0.8], [2, 0.7]);
const slice = () => new TimeSlice();
const bodies =
  (unit: Unit, of = corpus) =>
  (hit: Scored) =>
    bodyOf(of, hit.label, unit);

describe('§7.7.2 tokenBudget packing', () => {
  it.each([
    { budget: undefined, kept: [0, 1, 2], tokens: undefined },
    { budget: 10, kept: [0, 1, 2], tokens: 10 },
    { budget: 8, kept: [0, 1], tokens: 8 },
    { budget: 7, kept: [0], tokens: 3 }, // the first hit that does not fit ends the page: no skipping ahead to a smaller one
    { budget: 2, kept: [], tokens: 0 },
  ])('budget $budget packs $kept ($tokens tokens)', async ({ budget, kept, tokens }) => {
    const packed = await packTokenBudget(PAGE(), budget, bodies('chunk'), encoder, slice());
    expect(labels(packed.page)).toEqual(kept);
    expect(packed.tokens).toBe(tokens);
  });

  it('§7.7.2 unit document counts the whole document’s body', async () => {
    const packed = await packTokenBudget(scored([1, 1], [2, 1]), 11, bodies('document'), encoder, slice());
    expect(labels(packed.page)).toEqual([1]);
    expect(packed.tokens).toBe(10);
  });

  it('without a budget nothing is counted', async () => {
    counted.length = 0;
    await packTokenBudget(PAGE(), undefined, bodies('chunk'), encoder, slice());
    expect(counted).toEqual([]);
  });

  it('a chunk deleted since recall counts as an empty body', async () => {
    const gone = fakeCorpus([{ docId: 'd', ordinal: 0, text: 'a b c' }], {}, new Set([0]));
    const packed = await packTokenBudget(scored([0, 1]), 1, bodies('chunk', gone), encoder, slice());
    expect(packed).toMatchObject({ tokens: 0 });
    expect(labels(packed.page)).toEqual([0]);
  });
});
