import { describe, expect, it } from 'vitest';
import { planQueries } from '../../../src/retrieval/query-plan.js';
import { fakeCorpus } from './fake-corpus.js';

const signal = new AbortController().signal;

describe('§7.8 query transformation inside retrieve', () => {
  it.each([
    { rewrite: undefined, query: 'solar wind', lexical: 'solar wind', notes: [], calls: [] },
    { rewrite: false as const, query: 'solar wind', lexical: 'solar wind', notes: [], calls: [] },
    {
      rewrite: 'rewrite',
      query: 'solar wind rewritten',
      lexical: 'solar wind rewritten',
      notes: [],
      calls: ['transformQuery rewrite 1'],
    },
    {
      // Dense recall keeps the query as asked; lexical recall gets every expansion term (RM3-style).
      rewrite: 'multi-query',
      query: 'solar wind',
      lexical: 'solar wind alpha beta gamma',
      notes: ['multi-query: lexical recall expanded to "solar wind alpha beta gamma"'],
      calls: ['transformQuery multi-query 3'],
    },
  ])(
    'rewrite $rewrite: dense on "$query", lexical on "$lexical"',
    async ({ rewrite, query, lexical, notes, calls }) => {
      const corpus = fakeCorpus([]);
      const seen: string[] = ['earlier note'];
      const plan = await planQueries(corpus, 'solar wind', rewrite, seen, signal);
      expect(plan).toEqual({ query, lexicalQuery: lexical });
      expect(seen).toEqual(['earlier note', ...notes]);
      expect(corpus.calls).toEqual(calls);
    },
  );

  it('a rewrite that yields nothing keeps the query as asked', async () => {
    const corpus = { ...fakeCorpus([]), transformQuery: () => Promise.resolve([]) };
    expect(await planQueries(corpus, 'q', 'rewrite', [], signal)).toEqual({ query: 'q', lexicalQuery: 'q' });
  });
});
