import { describe, expect, it } from 'vitest';
import { RpcError } from '../../../src/protocol/errors.js';
import {
  funnelSizes,
  Leniency,
  resolveOptions,
  type OptionSettings,
  type RetrieveOptions,
} from '../../../src/retrieval/retrieve-options.js';

const SETTINGS: OptionSettings = {
  maxK: 50,
  maxCandidates: 200,
  candidateK: 100,
  defaultMode: 'hybrid',
  fusion: { method: 'rrf', alpha: 0.5, rrfK: 60 },
  rerankTopN: 30,
  rerankMaxCandidates: 150,
  fields: { year: 'int', published: 'date', lang: 'keyword' },
  filterLimits: { maxDepth: 16, maxNodes: 1024 },
};
const RERANKERS = [
  { method: 'cross-encoder', model: 'ms-marco' },
  { method: 'colbert', model: 'colbert-v2' },
];

const resolve = (params: RetrieveOptions, settings = SETTINGS) => resolveOptions(params, settings, RERANKERS);

/** Options this server cannot honour, and the usage note each earns under `strict: false`. */
const UNSUPPORTED: { option: string; params: Partial<RetrieveOptions>; note: string }[] = [
  { option: 'mode', params: { mode: 'graph' }, note: 'mode="graph" is not supported; mode hybrid was used' },
  {
    option: 'fusion.method',
    params: { fusion: { method: 'borda' } },
    note: 'fusion.method="borda" is not supported; rrf was used',
  },
  { option: 'unit', params: { unit: 'triplet' }, note: 'unit="triplet" is not supported; chunks were returned' },
  {
    option: 'rewrite',
    params: { rewrite: 'hyde' },
    note: 'rewrite="hyde" is not supported; the query was used as given',
  },
  { option: 'modality', params: { modality: 'image' }, note: 'modality="image" is not supported; text was used' },
  { option: 'level', params: { level: 2 }, note: 'level=2 is not supported; the corpus is flat (level 0)' },
  {
    option: 'encoding',
    params: { encoding: 'base64' },
    note: 'encoding="base64" is not supported; hit vectors are JSON numbers',
  },
  {
    option: 'rerank.method',
    params: { rerank: { method: 'llm' } },
    note: 'rerank.method="llm" is not supported; no rerank was applied',
  },
  {
    option: 'rerank.model',
    params: { rerank: { model: 'other' } },
    note: 'rerank.model="other" is not supported; ms-marco was used',
  },
];

/** The error `run` throws, or undefined. */
function thrown(run: () => unknown): RpcError | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof RpcError) return error;
    throw error;
  }
  return undefined;
}

describe('§3.3 the funnel: candidateK ≥ rerank.topN ≥ k, then clamped', () => {
  it.each([
    { name: 'defaults: candidateK max(k, setting), topN max(k, setting)', params: { k: 10 }, sizes: [10, 100, 30] },
    { name: 'k above the defaults widens both', params: { k: 40 }, sizes: [40, 100, 40] },
    { name: 'k above maxK is clamped, never an error (§7.7)', params: { k: 500 }, sizes: [50, 100, 50] },
    { name: 'candidateK above maxCandidates is clamped', params: { k: 5, candidateK: 10_000 }, sizes: [5, 200, 30] },
    { name: 'topN is clamped to the effective candidateK', params: { k: 5, candidateK: 20 }, sizes: [5, 20, 20] },
    { name: 'an asked topN within bounds is kept', params: { k: 5, rerank: { topN: 7 } }, sizes: [5, 100, 7] },
    {
      name: 'topN above rerank.maxCandidates is clamped to it (§7.7)',
      params: { k: 5, candidateK: 200, rerank: { topN: 200 } },
      sizes: [5, 200, 150],
    },
    { name: 'rerank false keeps the default topN', params: { k: 5, rerank: false as const }, sizes: [5, 100, 30] },
  ])('$name', ({ params, sizes }) => {
    const { k, candidateK, topN } = funnelSizes(params, SETTINGS);
    expect([k, candidateK, topN]).toEqual(sizes);
  });

  it.each([
    { name: 'candidateK below k is -32602 naming candidateK', params: { k: 10, candidateK: 9 }, field: 'candidateK' },
    {
      name: 'rerank.topN below k is -32602 naming rerank.topN',
      params: { k: 10, rerank: { topN: 9 } },
      field: 'rerank.topN',
    },
    {
      name: 'candidateK below rerank.topN is -32602 naming candidateK',
      params: { k: 10, candidateK: 12, rerank: { topN: 15 } },
      field: 'candidateK',
    },
  ])('§3.3 $name', ({ params, field }) => {
    expect(thrown(() => funnelSizes(params, SETTINGS))).toMatchObject({ code: -32602, data: { field } });
  });

  it('§3.3 candidateK equal to k and to topN is the tightest allowed funnel', () => {
    expect(funnelSizes({ k: 10, candidateK: 10, rerank: { topN: 10 } }, SETTINGS)).toEqual({
      k: 10,
      candidateK: 10,
      topN: 10,
    });
  });
});

describe('§7.7 strict: unsupported options are -32005, or fall back with a usage note under strict false', () => {
  it.each(UNSUPPORTED)('$option is -32005 naming it under strict (the default)', ({ option, params }) => {
    expect(thrown(() => resolve({ k: 5, ...params }))).toMatchObject({ code: -32005, data: { option } });
    expect(thrown(() => resolve({ k: 5, ...params, strict: true }))).toMatchObject({ code: -32005, data: { option } });
  });

  it.each(UNSUPPORTED)('strict false: $option falls back and says so in the notes', ({ params, note }) => {
    expect(resolve({ k: 5, ...params, strict: false }).notes).toEqual([note]);
  });

  it('strict false: the fallbacks are what the notes say', () => {
    const options = resolve({ k: 5, mode: 'graph', fusion: { method: 'borda' }, unit: 'triplet', strict: false });
    expect([options.mode, options.fusion.method, options.unit]).toEqual(['hybrid', 'rrf', 'chunk']);
    expect(resolve({ k: 5, rerank: { method: 'llm' }, strict: false }).reranker).toBeUndefined();
    const rerank = resolve({ k: 5, rerank: { method: 'colbert', model: 'other' }, strict: false });
    expect(rerank.reranker?.method).toBe('colbert');
  });

  it('the first unsupported option is the one reported, in the order rewrite, modality, level, encoding, mode', () => {
    const params = { k: 5, mode: 'graph', encoding: 'base64', level: 1, modality: 'image', rewrite: 'hyde' };
    expect(thrown(() => resolve(params))).toMatchObject({ data: { option: 'rewrite' } });
    const rest = { ...params, rewrite: undefined };
    expect(thrown(() => resolve(rest))).toMatchObject({ data: { option: 'modality' } });
  });

  it('an unsupported option is reported before a §3.3 funnel error', () => {
    expect(thrown(() => resolve({ k: 5, candidateK: 1, mode: 'graph' }))).toMatchObject({ code: -32005 });
  });
});

describe('option resolution', () => {
  it.each([
    { params: { k: 5 }, mode: 'hybrid', fusion: 'rrf', unit: 'chunk', reranker: 'cross-encoder' },
    { params: { k: 5, mode: 'dense' }, mode: 'dense', fusion: 'rrf', unit: 'chunk', reranker: 'cross-encoder' },
    {
      params: { k: 5, fusion: { method: 'convex' } },
      mode: 'hybrid',
      fusion: 'convex',
      unit: 'chunk',
      reranker: 'cross-encoder',
    },
    { params: { k: 5, unit: 'document' }, mode: 'hybrid', fusion: 'rrf', unit: 'document', reranker: 'cross-encoder' },
    { params: { k: 5, unit: 'passage' }, mode: 'hybrid', fusion: 'rrf', unit: 'passage', reranker: 'cross-encoder' },
    { params: { k: 5, unit: 'page' }, mode: 'hybrid', fusion: 'rrf', unit: 'page', reranker: 'cross-encoder' },
    {
      params: { k: 5, rerank: { method: 'colbert' } },
      mode: 'hybrid',
      fusion: 'rrf',
      unit: 'chunk',
      reranker: 'colbert',
    },
    { params: { k: 5, rerank: false as const }, mode: 'hybrid', fusion: 'rrf', unit: 'chunk', reranker: undefined },
  ])('$params resolves to $mode / $fusion / $unit / $reranker', ({ params, mode, fusion, unit, reranker }) => {
    const options = resolve(params);
    expect(options).toMatchObject({ mode, unit, fusion: { method: fusion } });
    expect(options.reranker?.method).toBe(reranker);
    expect(options.notes).toEqual([]);
  });

  it('§7.7.2 an unadvertised unit is -32005 under strict, chunks with a note otherwise', () => {
    expect(() => resolve({ k: 5, unit: 'community' })).toThrow(expect.objectContaining({ code: -32005 }));
    expect(resolve({ k: 5, unit: 'community', strict: false }).notes[0]).toMatch(/^unit="community"/);
  });

  it('no cross-encoder configured: no reranker by default, and no note', () => {
    const options = resolveOptions({ k: 5 }, SETTINGS, [{ method: 'colbert', model: 'c' }]);
    expect(options.reranker).toBeUndefined();
    expect(options.notes).toEqual([]);
  });

  it('fusion parameters come from the request, else the settings; weights default to none', () => {
    expect(resolve({ k: 5 }).fusion).toEqual({ method: 'rrf', weights: {}, rrfK: 60, alpha: 0.5 });
    const asked = { method: 'convex', weights: { dense: 2 }, rrfK: 10, alpha: 0.9 };
    expect(resolve({ k: 5, fusion: asked }).fusion).toEqual(asked);
  });

  it('§7.7.1 seed makes the dense list exact (no ANN search), and says so', () => {
    const options = resolve({ k: 5, seed: 42 });
    expect(options.exact).toBe(true);
    expect(options.notes).toEqual(['seed: the dense list was scored exactly over every vector (no ANN search)']);
    expect(resolve({ k: 5 }).exact).toBe(false);
  });

  it('§8 a filter is compiled against the declared fields; an undeclared field is -32602', () => {
    const { predicate } = resolve({ k: 5, filter: { field: 'year', op: 'gte', value: 2020 } });
    expect([predicate?.({ year: 2021 }), predicate?.({ year: 2019 })]).toEqual([true, false]);
    expect(resolve({ k: 5 }).predicate).toBeUndefined();
    expect(thrown(() => resolve({ k: 5, filter: { field: 'colour', op: 'eq', value: 'red' } }))).toMatchObject({
      code: -32602,
      data: { field: 'filter.colour' },
    });
  });

  it.each([
    { field: 'year', why: 'an int field' },
    { field: 'nope', why: 'an undeclared field' },
    { field: 'constructor', why: 'an inherited property, not a declared field' },
  ])('recency.field $field ($why) is -32602 naming recency.field', ({ field }) => {
    expect(thrown(() => resolve({ k: 5, recency: { field, halfLifeDays: 30 } }))).toMatchObject({
      code: -32602,
      data: { field: 'recency.field' },
    });
  });

  it('recency on a declared date field is accepted', () => {
    expect(thrown(() => resolve({ k: 5, recency: { field: 'published', halfLifeDays: 30 } }))).toBeUndefined();
  });
});

describe('Leniency', () => {
  it('throws -32005 naming the option under strict; notes the fallback otherwise', () => {
    expect(thrown(() => new Leniency(true).unsupported('mode', 'x', 'y'))).toMatchObject({
      code: -32005,
      data: { option: 'mode' },
    });
    const lenient = new Leniency(false);
    lenient.unsupported('mode', 'x', 'dense was used');
    expect(lenient.notes).toEqual(['mode="x" is not supported; dense was used']);
  });
});
