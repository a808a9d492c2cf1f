import { describe, expect, it } from 'vitest';
import { rerankFunnel, type FunnelReranker } from '../../../src/retrieval/funnel.js';
import { fakeContext, fakeCorpus, labels, scored } from './fake-corpus.js';

const corpus = fakeCorpus([0, 1, 2, 3].map((label) => ({ docId: `d${label}`, ordinal: 0, text: `text ${label}` })));

/** Scores a passage by the number in its text: "text 3" scores 3. */
function byNumber(seen: string[][] = []): FunnelReranker {
  return {
    method: 'colbert',
    model: 'fake-model',
    score: (_query, passages) => {
      seen.push([...passages]);
      return Promise.resolve(Float32Array.from(passages.map((text) => Number(text.split(' ')[1]))));
    },
  };
}

describe('§3.3 the rerank funnel', () => {
  it.each([
    { topN: 4, order: [3, 2, 1, 0], reranked: 4 },
    { topN: 2, order: [1, 0, 2, 3], reranked: 2 }, // only the head is rescored; the tail keeps its order behind it
    { topN: 10, order: [3, 2, 1, 0], reranked: 4 },
  ])('topN $topN: rescored head first, the rest behind in their order', async ({ topN, order, reranked }) => {
    const seen: string[][] = [];
    const result = await rerankFunnel(
      scored([0, 0.9], [1, 0.8], [2, 0.7], [3, 0.6]),
      byNumber(seen),
      topN,
      'q',
      corpus,
      fakeContext(),
    );
    expect(labels(result.ranked)).toEqual(order);
    expect(result.reranked).toBe(reranked);
    expect(seen[0]).toHaveLength(reranked);
  });

  it('the reranker’s score replaces the candidate’s and is kept as scores.rerank; the tail keeps its own', async () => {
    const { ranked } = await rerankFunnel(scored([0, 0.9], [1, 0.8]), byNumber(), 1, 'q', corpus, fakeContext());
    expect(ranked).toEqual([
      { label: 0, score: 0, scores: { dense: 0.9, rerank: 0 } },
      { label: 1, score: 0.8, scores: { dense: 0.8 } },
    ]);
  });

  it('§9 reports rerank progress at 0.7 and logs the model', async () => {
    const ctx = fakeContext();
    await rerankFunnel(scored([0, 1], [1, 1]), byNumber(), 2, 'q', corpus, ctx);
    expect(ctx.reported.progress).toEqual([
      { stage: 'rerank', fraction: 0.7, update: { message: 'reranked 2 with colbert' } },
    ]);
    expect(ctx.reported.logs).toEqual([
      { level: 'debug', message: 'reranked 2 with colbert', data: { model: 'fake-model' } },
    ]);
  });

  it.each([
    { why: 'no reranker', reranker: undefined, ranking: scored([0, 1]) },
    { why: 'no candidates', reranker: byNumber(), ranking: scored() },
  ])('$why: the ranking as it is, nothing reranked, no progress', async ({ reranker, ranking }) => {
    const ctx = fakeContext();
    const result = await rerankFunnel(ranking, reranker, 5, 'q', corpus, ctx);
    expect(result).toEqual({ ranked: ranking, reranked: 0 });
    expect(ctx.reported.progress).toEqual([]);
  });

  it('a chunk deleted since recall is scored as empty text; a missing score is 0', async () => {
    const gone = fakeCorpus([{ docId: 'd', ordinal: 0, text: 'text 5' }], {}, new Set([0]));
    const seen: string[][] = [];
    const short: FunnelReranker = {
      ...byNumber(seen),
      score: (_q, passages) => (seen.push([...passages]), Promise.resolve(new Float32Array(0))),
    };
    const { ranked } = await rerankFunnel(scored([0, 1]), short, 1, 'q', gone, fakeContext());
    expect(seen).toEqual([['']]);
    expect(ranked[0]!.score).toBe(0);
  });
});
