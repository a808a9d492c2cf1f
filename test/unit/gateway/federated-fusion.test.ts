import { describe, expect, it } from 'vitest';
import { parseRegistry, RegistryError } from '../../../src/gateway/engine-registry.js';
import { fuseEngines } from '../../../src/gateway/federated-fusion.js';

const hits = (...specs: [string, number, string?][]) =>
  specs.map(([id, score, text]) => ({ id, score, ...(text === undefined ? {} : { text }), meta: { from: id } }));

describe('§16.3 federated fusion', () => {
  it('RRF sums weight/(rrfK + rank) across engines; a hit both return outranks either alone', () => {
    const fused = fuseEngines(
      [
        { engine: 'a', weight: 1, hits: hits(['x', 9], ['y', 8]) },
        { engine: 'b', weight: 1, hits: hits(['y', 0.2], ['z', 0.1]) },
      ],
      { method: 'rrf', rrfK: 60 },
    );
    expect(fused.map((hit) => hit.id)).toEqual(['y', 'x', 'z']);
    expect(fused[0]?.score).toBeCloseTo(1 / 62 + 1 / 61, 12);
    expect(fused[1]?.score).toBeCloseTo(1 / 61, 12);
  });

  it('breaks ties by summed weight, then the smaller stringified id, whatever order the engines answered in', () => {
    const a = { engine: 'a', weight: 2, hits: hits(['m', 1]) };
    const b = { engine: 'b', weight: 1, hits: hits(['k', 1], ['n', 0]) };
    const c = { engine: 'c', weight: 1, hits: hits(['j', 1]) };
    // m: 2/61; k and j: 1/61 each (tie on score and weight: id order).
    for (const order of [
      [a, b, c],
      [c, b, a],
      [b, a, c],
    ]) {
      expect(fuseEngines(order, { method: 'rrf', rrfK: 60 }).map((hit) => hit.id)).toEqual(['m', 'j', 'k', 'n']);
    }
    // weighted min-max: w = 2·1; v = 2·0.5 (summed weight 2) ties u = 1·1 (weight 1) on score: the heavier wins.
    const tied = fuseEngines(
      [
        { engine: 'a', weight: 1, hits: hits(['u', 1]) },
        { engine: 'b', weight: 2, hits: hits(['w', 1], ['v', 0.5], ['x', 0]) },
      ],
      { method: 'weighted', rrfK: 60 },
    );
    expect(tied.map((hit) => [hit.id, hit.score])).toEqual([
      ['w', 2],
      ['v', 1],
      ['u', 1],
      ['x', 0],
    ]);
  });

  it('dedups by stringified id, keeping the richest body and merging meta; names the best-ranked origin', () => {
    const fused = fuseEngines(
      [
        { engine: 'a', weight: 1, hits: [{ id: 1, score: 1, text: 'short', meta: { lang: 'en' } }] },
        {
          engine: 'b',
          weight: 1,
          hits: [{ id: '1', score: 5, text: 'a much longer body', meta: { year: 2020, lang: 'de' } }],
        },
      ],
      { method: 'rrf', rrfK: 60 },
    );
    expect(fused).toHaveLength(1);
    expect(fused[0]).toMatchObject({
      text: 'a much longer body',
      meta: { lang: 'en', year: 2020, engine: 'a', engineRank: 1, engineScore: 1 },
    });
  });

  it("convex normalises from each engine's scoreFloor; weighted from the returned minimum", () => {
    const lists = [
      { engine: 'a', weight: 1, scoreFloor: 0, hits: hits(['x', 0.8], ['y', 0.4]) },
      { engine: 'b', weight: 1, scoreFloor: -1, hits: hits(['z', 0.5], ['w', 0]) },
    ];
    const convex = fuseEngines(lists, { method: 'convex', rrfK: 60 });
    expect(convex.find((hit) => hit.id === 'y')?.score).toBeCloseTo(0.5, 12); // (0.4 - 0) / (0.8 - 0)
    expect(convex.find((hit) => hit.id === 'w')?.score).toBeCloseTo(2 / 3, 12); // (0 + 1) / (0.5 + 1)
    const weighted = fuseEngines(lists, { method: 'weighted', rrfK: 60 });
    expect(weighted.find((hit) => hit.id === 'y')?.score).toBe(0);
    expect(weighted.find((hit) => hit.id === 'w')?.score).toBe(0);
  });
});

describe('shards: global re-fusion for shards of one corpus', () => {
  const shardHit = (id: string, dense: number, sparse: number) => ({
    id,
    score: 1,
    scores: { dense, sparse, fused: 1 },
  });

  it('ranks by the convex combination over all shards, where per-engine normalisation would interleave', () => {
    // Each shard's best hit scores 1 in its own fusion; globally, shard b's best is far weaker.
    const lists = [
      { engine: 'a', weight: 1, hits: [shardHit('strong', 0.8, 12), shardHit('second', 0.7, 10)] },
      { engine: 'b', weight: 1, hits: [shardHit('weak', 0.2, 1)] },
    ];
    expect(fuseEngines(lists, { method: 'rrf', rrfK: 60 }).map((hit) => hit.id)).toEqual(['strong', 'weak', 'second']);
    const fused = fuseEngines(lists, { method: 'shards', rrfK: 60, alpha: 0.5 });
    expect(fused.map((hit) => hit.id)).toEqual(['strong', 'second', 'weak']);
    expect(fused[0]?.score).toBeCloseTo(1, 12);
    // second: 0.5·(1.7/1.8) + 0.5·(10/12)
    expect(fused[1]?.score).toBeCloseTo(0.5 * (1.7 / 1.8) + 0.5 * (10 / 12), 12);
  });

  it('uses rerank scores when every hit carries one, and a single list alone when only one was recalled', () => {
    const reranked = [
      { engine: 'a', weight: 1, hits: [{ id: 'x', score: 0, scores: { dense: 0.9, rerank: 0.2 } }] },
      { engine: 'b', weight: 1, hits: [{ id: 'y', score: 0, scores: { dense: 0.1, rerank: 0.6 } }] },
    ];
    expect(fuseEngines(reranked, { method: 'shards', rrfK: 60 }).map((hit) => hit.id)).toEqual(['y', 'x']);
    const sparseOnly = [
      { engine: 'a', weight: 1, hits: [{ id: 'x', score: 3, scores: { sparse: 3 } }] },
      { engine: 'b', weight: 1, hits: [{ id: 'y', score: 9, scores: { sparse: 9 } }] },
    ];
    expect(fuseEngines(sparseOnly, { method: 'shards', rrfK: 60 }).map((hit) => [hit.id, hit.score])).toEqual([
      ['y', 1],
      ['x', 1 / 3],
    ]);
  });
});

describe('§16.1 registry', () => {
  it('reads engines with defaults, and refuses unknown keys, missing commands or urls and repeated ids', () => {
    const [engine] = parseRegistry({ engines: [{ id: 'a', transport: 'http', url: 'http://h/rcp' }] });
    expect(engine).toMatchObject({ id: 'a', weight: 1, required: false, priority: 0, headers: {}, env: {} });
    const bad = [
      { engines: [] },
      { engines: [{ id: 'a', transport: 'stdio' }] },
      { engines: [{ id: 'a', transport: 'http' }] },
      { engines: [{ id: 'a', transport: 'http', url: 'ftp://x' }] },
      { engines: [{ id: 'a', transport: 'http', url: 'http://x', wieght: 2 }] },
      {
        engines: [
          { id: 'a', transport: 'http', url: 'http://x' },
          { id: 'a', transport: 'http', url: 'http://y' },
        ],
      },
    ];
    for (const registry of bad) expect(() => parseRegistry(registry), JSON.stringify(registry)).toThrow(RegistryError);
  });

  it('a replica group: urls, each once, with a host, on http only; no engine named as one of its replicas', () => {
    const [group] = parseRegistry({
      engines: [{ id: 'p', transport: 'http', urls: ['http://a/rcp', 'http://b/rcp'] }],
    });
    expect(group).toMatchObject({ id: 'p', urls: ['http://a/rcp', 'http://b/rcp'], url: undefined });
    const bad = [
      { engines: [{ id: 'p', transport: 'http', url: 'http://a', urls: ['http://b'] }] },
      { engines: [{ id: 'p', transport: 'http', urls: [] }] },
      { engines: [{ id: 'p', transport: 'http', urls: ['http://a', 'http://a'] }] },
      { engines: [{ id: 'p', transport: 'http', urls: ['http://'] }] },
      { engines: [{ id: 'p', transport: 'stdio', command: ['x'], url: 'http://a' }] },
      { engines: [{ id: 'p', transport: 'stdio', command: ['x'], urls: ['http://a'] }] },
      {
        engines: [
          { id: 'p', transport: 'http', urls: ['http://a', 'http://b'] },
          { id: 'p/1', transport: 'http', url: 'http://c' },
        ],
      },
    ];
    for (const registry of bad) expect(() => parseRegistry(registry), JSON.stringify(registry)).toThrow(RegistryError);
  });
});
