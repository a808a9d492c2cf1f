import { describe, expect, it } from 'vitest';
import { applyRecency } from '../../../src/retrieval/recency.js';
import { fakeCorpus, labels, scored } from './fake-corpus.js';

const NOW = Date.parse('2024-06-01T00:00:00Z');
const DAY = 86_400_000;
const corpus = fakeCorpus(
  [
    { docId: 'old', ordinal: 0, text: '' },
    { docId: 'new', ordinal: 0, text: '' },
    { docId: 'undated', ordinal: 0, text: '' },
    { docId: 'future', ordinal: 0, text: '' },
    { docId: 'epoch', ordinal: 0, text: '' },
  ],
  {
    old: { meta: { published: new Date(NOW - 30 * DAY).toISOString() } },
    new: { meta: { published: new Date(NOW).toISOString() } },
    undated: { meta: { published: 'not a date' } },
    future: { meta: { published: new Date(NOW + 10 * DAY).toISOString() } },
    epoch: { meta: { published: NOW - 60 * DAY } },
  },
);

describe('recency (§7.7 `recency`)', () => {
  it.each([
    { label: 0, why: 'one half-life old: halved', decay: 0.5 },
    { label: 1, why: 'dated now: kept', decay: 1 },
    { label: 3, why: 'dated in the future: age 0, kept', decay: 1 },
    { label: 4, why: 'epoch-ms date, two half-lives old: quartered', decay: 0.25 },
  ])('$why', ({ label, decay }) => {
    const [hit] = applyRecency(scored([label, 0.8]), { field: 'published', halfLifeDays: 30 }, corpus, NOW);
    expect(hit!.score).toBeCloseTo(0.8 * decay, 12);
    expect(hit!.scores.recency).toBeCloseTo(decay, 12);
  });

  it('an undated document keeps its score and gets no recency score', () => {
    const [hit] = applyRecency(scored([2, 0.8]), { field: 'published', halfLifeDays: 30 }, corpus, NOW);
    expect(hit).toEqual({ label: 2, score: 0.8, scores: { dense: 0.8 } });
  });

  it('re-sorts: the recent of two equal documents first; ties on the smaller label', () => {
    const ranked = applyRecency(
      scored([0, 1], [2, 0.5], [1, 1]),
      { field: 'published', halfLifeDays: 30 },
      corpus,
      NOW,
    );
    expect(labels(ranked)).toEqual([1, 0, 2]);
    const tied = applyRecency(scored([2, 0.5], [0, 1]), { field: 'published', halfLifeDays: 30 }, corpus, NOW);
    expect(labels(tied)).toEqual([0, 2]);
  });

  it('without recency the ranking is untouched, not even re-sorted', () => {
    const ranked = scored([2, 0.1], [0, 0.9]);
    expect(applyRecency(ranked, undefined, corpus, NOW)).toBe(ranked);
    expect(labels(ranked)).toEqual([2, 0]);
  });
});
