import { describe, expect, it } from 'vitest';
import type { FusionInput } from '../../../src/retrieval/fusion.js';
import { atLeast, rankLists } from '../../../src/retrieval/ranking.js';
import { fakeContext, labels, scored } from './fake-corpus.js';

const DENSE: FusionInput = {
  name: 'dense',
  weight: 1,
  floor: -1,
  hits: [
    { label: 1, score: 0.9 },
    { label: 2, score: 0.5 },
  ],
};
const SPARSE: FusionInput = {
  name: 'sparse',
  weight: 1,
  floor: 0,
  hits: [
    { label: 2, score: 8 },
    { label: 3, score: 4 },
  ],
};
const FUSION = { method: 'rrf' as const, rrfK: 60, alpha: 0.5 };
const idOf = (label: number) => `doc-${label}`;

describe('rankLists', () => {
  it('one list is the ranking as recalled, its score under the list’s name; no fuse progress', () => {
    const ctx = fakeContext();
    expect(rankLists([SPARSE], FUSION, 10, idOf, ctx)).toEqual([
      { label: 2, score: 8, scores: { sparse: 8 } },
      { label: 3, score: 4, scores: { sparse: 4 } },
    ]);
    expect(ctx.reported.progress).toEqual([]);
  });

  it.each([
    // rrf: 2 is in both lists, so first; 1 (rank 1) beats 3 (rank 2).
    { method: 'rrf' as const, order: [2, 1, 3], top: 1 / 62 + 1 / 61 },
    // convex α 1 is the dense order alone (3 has no dense score: it scores nothing there).
    { method: 'convex' as const, alpha: 1, order: [1, 2, 3], top: 1 },
  ])('§16.3 $method fuses two lists in order $order', ({ method, alpha, order, top }) => {
    const ctx = fakeContext();
    const ranked = rankLists([DENSE, SPARSE], { ...FUSION, method, alpha: alpha ?? 0.5 }, 10, idOf, ctx);
    expect(labels(ranked)).toEqual(order);
    expect(ranked[0]!.score).toBeCloseTo(top, 12);
    expect(ctx.reported.progress).toEqual([
      { stage: 'fuse', fraction: 0.45, update: { message: `${method} over 2 lists` } },
    ]);
  });

  it('§16.3 a fused hit keeps each list’s raw score beside the fused one', () => {
    const [hit] = rankLists([DENSE, SPARSE], FUSION, 10, idOf, fakeContext());
    expect(hit!.scores).toEqual({ dense: 0.5, sparse: 8, fused: hit!.score });
  });

  it('§16.3 ties break on the stringified id the client will see', () => {
    const a: FusionInput = { name: 'dense', weight: 1, floor: -1, hits: [{ label: 1, score: 1 }] };
    const b: FusionInput = { name: 'sparse', weight: 1, floor: 0, hits: [{ label: 2, score: 1 }] };
    expect(labels(rankLists([a, b], FUSION, 10, (label) => (label === 1 ? 'z' : 'a'), fakeContext()))).toEqual([2, 1]);
    expect(labels(rankLists([a, b], FUSION, 10, (label) => (label === 1 ? 'a' : 'z'), fakeContext()))).toEqual([1, 2]);
  });

  it('§3.3 fused candidates are cut to candidateK', () => {
    expect(labels(rankLists([DENSE, SPARSE], FUSION, 2, idOf, fakeContext()))).toEqual([2, 1]);
  });
});

describe('minScore', () => {
  it.each([
    { minScore: undefined, kept: [1, 2, 3] },
    { minScore: 0.5, kept: [1, 2] },
    { minScore: 0.9, kept: [1] },
    { minScore: 2, kept: [] },
    { minScore: -Infinity, kept: [1, 2, 3] },
  ])('minScore $minScore keeps $kept (a score equal to it stays)', ({ minScore, kept }) => {
    expect(labels(atLeast(scored([1, 0.9], [2, 0.5], [3, 0.1]), minScore))).toEqual(kept);
  });
});
