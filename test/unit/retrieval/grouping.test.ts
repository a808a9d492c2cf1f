import { describe, expect, it } from 'vitest';
import { groupUnits } from '../../../src/retrieval/grouping.js';
import { fakeCorpus, labels, scored } from './fake-corpus.js';

const corpus = fakeCorpus([
  { docId: 'a', ordinal: 0, text: '' },
  { docId: 'a', ordinal: 1, text: '' },
  { docId: 'b', ordinal: 0, text: '' },
  { docId: 'b', ordinal: 1, text: '' },
]);

describe('§7.7.2 unit grouping', () => {
  it.each([
    { unit: 'chunk' as const, ranking: [1, 2, 0, 3], kept: [1, 2, 0, 3] },
    { unit: 'document' as const, ranking: [1, 2, 0, 3], kept: [1, 2] },
    { unit: 'document' as const, ranking: [3, 0, 2, 1], kept: [3, 0] },
  ])('unit $unit over $ranking keeps $kept', ({ unit, ranking, kept }) => {
    const ranked = scored(...ranking.map((label, i): [number, number] => [label, 1 - i / 10]));
    expect(labels(groupUnits(ranked, unit, corpus))).toEqual(kept);
  });

  it('a document hit carries its best chunk’s score', () => {
    const [hit] = groupUnits(scored([1, 0.9], [0, 0.4]), 'document', corpus);
    expect(hit).toMatchObject({ label: 1, score: 0.9 });
  });
});
