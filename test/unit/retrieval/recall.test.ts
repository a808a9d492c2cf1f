import { describe, expect, it } from 'vitest';
import type { Encoder } from '../../../src/models/index.js';
import { SCORE_FLOOR } from '../../../src/retrieval/fusion.js';
import { completeUnion, recall, type RecallPlan } from '../../../src/retrieval/recall.js';
import { fakeContext, fakeCorpus, type FakeChunk } from './fake-corpus.js';

/** Three chunks: 0 is dense-only, 1 matches both, 2 is lexical-only ("rare term"). */
const CHUNKS: FakeChunk[] = [
  { docId: 'a', ordinal: 0, text: 'nothing shared', vector: [1, 0] },
  { docId: 'b', ordinal: 0, text: 'rare words here', vector: [0.5, 0.5] },
  { docId: 'b', ordinal: 1, text: 'rare term', vector: [-1, 0] },
];
/** Embeds every query as [1, 0]. */
const encoder: Pick<Encoder, 'embed'> = {
  embed: (texts) => Promise.resolve(texts.map(() => Float32Array.from([1, 0]))),
};

const plan = (over: Partial<RecallPlan> = {}): RecallPlan => ({
  query: 'rare',
  lexicalQuery: 'rare',
  mode: 'hybrid',
  fusion: { method: 'rrf', weights: {} },
  candidateK: 2,
  k: 1,
  allow: undefined,
  ...over,
});

const lists = (recalled: {
  lists: { name: string; weight: number; hits: readonly { label: number; score: number }[] }[];
}) =>
  recalled.lists.map((list) => ({ name: list.name, weight: list.weight, labels: list.hits.map((hit) => hit.label) }));

describe('recall', () => {
  it.each([
    { mode: 'dense' as const, expected: [{ name: 'dense', weight: 1, labels: [0, 1] }] },
    { mode: 'sparse' as const, expected: [{ name: 'sparse', weight: 1, labels: [1, 2] }] },
    {
      mode: 'hybrid' as const,
      expected: [
        { name: 'dense', weight: 1, labels: [0, 1] },
        { name: 'sparse', weight: 1, labels: [1, 2] },
      ],
    },
  ])('mode $mode runs its lists, candidateK wide', async ({ mode, expected }) => {
    const recalled = await recall(fakeCorpus(CHUNKS), encoder, plan({ mode }), fakeContext());
    expect(lists(recalled)).toEqual(expected);
  });

  it('§16.3 weights come from fusion.weights, 1 when absent', async () => {
    const recalled = await recall(
      fakeCorpus(CHUNKS),
      encoder,
      plan({ fusion: { method: 'rrf', weights: { sparse: 3 } } }),
      fakeContext(),
    );
    expect(recalled.lists.map((list) => list.weight)).toEqual([1, 3]);
  });

  it('§8 the filter applies during recall, to both lists', async () => {
    const recalled = await recall(fakeCorpus(CHUNKS), encoder, plan({ allow: [1] }), fakeContext());
    expect(lists(recalled).map((list) => list.labels)).toEqual([[1], [1]]);
  });

  it('a chunk deleted while recall ran is no candidate', async () => {
    const recalled = await recall(fakeCorpus(CHUNKS, {}, new Set([1])), encoder, plan(), fakeContext());
    expect(lists(recalled).map((list) => list.labels)).toEqual([[0], [2]]);
    expect(recalled.candidates).toBe(2);
  });

  it.each([
    { method: 'rrf' as const, completed: false },
    { method: 'weighted' as const, completed: true },
    { method: 'convex' as const, completed: true },
  ])('§16.3 $method: lists completed over the union: $completed', async ({ method, completed }) => {
    const corpus = fakeCorpus(CHUNKS);
    const recalled = await recall(corpus, encoder, plan({ fusion: { method, weights: {} } }), fakeContext());
    const union = completed
      ? [
          [0, 1, 2],
          [1, 2, 0],
        ]
      : [
          [0, 1],
          [1, 2],
        ];
    expect(lists(recalled).map((list) => list.labels)).toEqual(union);
    expect(corpus.calls.some((call) => call.startsWith('denseScores'))).toBe(completed);
    expect(recalled.candidates).toBe(3);
  });

  it('uses the lexical query for BM25 and the query for the dense vector', async () => {
    const corpus = fakeCorpus(CHUNKS);
    await recall(corpus, encoder, plan({ query: 'dense text', lexicalQuery: 'rare term' }), fakeContext());
    expect(corpus.calls).toContain('searchLexical "rare term" k=2');
  });

  it('§9 reports recall progress at 0.25 with the first list’s top k as chunk ids', async () => {
    const ctx = fakeContext();
    await recall(fakeCorpus(CHUNKS), encoder, plan({ k: 1 }), ctx);
    expect(ctx.reported.progress).toEqual([
      {
        stage: 'recall',
        fraction: 0.25,
        update: { message: '3 candidates', partial: { hits: [{ id: 'a#0', score: 1 }] } },
      },
    ]);
    expect(ctx.reported.logs[0]).toMatchObject({
      level: 'debug',
      message: 'recall: 3 candidates',
      data: { lists: { dense: 2, sparse: 2 } },
    });
  });

  it('§7.14 a request cancelled during recall stops there: nothing is reported', async () => {
    const controller = new AbortController();
    const ctx = fakeContext(controller.signal);
    const corpus = fakeCorpus(CHUNKS);
    const cancelling = {
      ...corpus,
      searchLexical: async (...args: Parameters<typeof corpus.searchLexical>) => {
        controller.abort(new Error('cancelled'));
        return corpus.searchLexical(...args);
      },
    };
    await expect(recall(cancelling, encoder, plan({ mode: 'sparse' }), ctx)).rejects.toThrow('cancelled');
    expect(ctx.reported.progress).toEqual([]);
  });
});

describe('§16.3 completeUnion', () => {
  it('appends each list’s exact score for the candidates it missed, after its own hits', async () => {
    const corpus = fakeCorpus(CHUNKS);
    const inputs = [
      { name: 'dense', weight: 1, floor: SCORE_FLOOR.dense, hits: [{ label: 0, score: 1 }] },
      { name: 'sparse', weight: 1, floor: SCORE_FLOOR.sparse, hits: [{ label: 2, score: 2 }] },
    ];
    await completeUnion(corpus, inputs, 'rare term', Float32Array.from([1, 0]), new AbortController().signal);
    expect(inputs[0]!.hits).toEqual([
      { label: 0, score: 1 },
      { label: 2, score: -1 },
    ]);
    expect(inputs[1]!.hits).toEqual([
      { label: 2, score: 2 },
      { label: 0, score: 0 },
    ]);
  });

  it('a score the index cannot give falls back to the list’s floor', async () => {
    const corpus = { ...fakeCorpus(CHUNKS), denseScores: () => Promise.resolve([]) };
    const inputs = [
      { name: 'dense', weight: 1, floor: -1, hits: [{ label: 0, score: 1 }] },
      { name: 'sparse', weight: 1, floor: 0, hits: [{ label: 1, score: 1 }] },
    ];
    await completeUnion(corpus, inputs, 'rare', Float32Array.from([1, 0]), new AbortController().signal);
    expect(inputs[0]!.hits.at(-1)).toEqual({ label: 1, score: -1 });
  });
});
