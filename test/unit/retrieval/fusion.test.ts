import { describe, expect, it } from 'vitest';
import { fuseEngines } from '../../../src/gateway/federated-fusion.js';
import {
  boundedWeights,
  byFusedOrder,
  convex,
  convexShares,
  normalise,
  rrf,
  rrfTerm,
  SCORE_FLOOR,
  scoreRange,
  weighted,
  type FusionInput,
} from '../../../src/retrieval/fusion.js';

const lists = (dense: [number, number][], sparse: [number, number][], weights = [1, 1]): FusionInput[] => [
  { name: 'dense', weight: weights[0]!, floor: -1, hits: dense.map(([label, score]) => ({ label, score })) },
  { name: 'sparse', weight: weights[1]!, floor: 0, hits: sparse.map(([label, score]) => ({ label, score })) },
];

describe('§16.3 fusion', () => {
  it('rrf: Σ weight / (rrfK + 1-based rank)', () => {
    const [top] = rrf(
      lists(
        [
          [1, 0.9],
          [2, 0.8],
        ],
        [
          [2, 10],
          [1, 5],
        ],
        [1, 2],
      ),
      60,
    );
    expect(top?.label).toBe(2);
    expect(top?.score).toBeCloseTo(1 / 62 + 2 / 61, 12);
  });

  it('weighted: min-max per list over the returned set', () => {
    const fused = weighted(
      lists(
        [
          [1, 0.9],
          [2, 0.5],
        ],
        [
          [2, 10],
          [1, 0],
        ],
      ),
    );
    expect(fused.map((hit) => hit.score)).toEqual([1, 1]);
  });

  it('convex: anchored at each floor, α on the first list', () => {
    const [hit] = convex(lists([[1, 0]], [[1, 5]]), 0.25);
    // dense: (0 - -1) / (0 - -1) = 1; sparse: 5/5 = 1
    expect(hit?.score).toBeCloseTo(0.25 + 0.75, 12);
    const [half] = convex(
      lists(
        [
          [1, 0],
          [2, 1],
        ],
        [
          [1, 4],
          [2, 8],
        ],
      ),
      0.5,
    );
    expect(half?.label).toBe(2);
  });

  it('ties break by summed weight, then by the smaller stringified id (not by arrival order)', () => {
    const tied = rrf(
      [
        { name: 'a', weight: 1, floor: 0, hits: [{ label: 10, score: 1 }] },
        { name: 'b', weight: 1, floor: 0, hits: [{ label: 9, score: 1 }] },
      ],
      60,
    );
    expect(tied.map((hit) => hit.label)).toEqual([10, 9]); // "10" < "9" as strings
    const named = rrf(
      [
        { name: 'a', weight: 1, floor: 0, hits: [{ label: 1, score: 1 }] },
        { name: 'b', weight: 1, floor: 0, hits: [{ label: 2, score: 1 }] },
      ],
      60,
      (label) => (label === 1 ? 'zeta#0' : 'alpha#0'),
    );
    expect(named.map((hit) => hit.label)).toEqual([2, 1]);
    const heavier = rrf(
      [
        {
          name: 'a',
          weight: 2,
          floor: 0,
          hits: [
            { label: 1, score: 1 },
            { label: 2, score: 1 },
          ],
        },
        { name: 'b', weight: 0, floor: 0, hits: [{ label: 1, score: 1 }] },
      ],
      60,
    );
    expect(heavier[0]?.label).toBe(1);
  });

  it.each([
    ['rrf', (inputs: FusionInput[]) => rrf(inputs, 1)],
    ['weighted', (inputs: FusionInput[]) => weighted(inputs)],
    ['convex', (inputs: FusionInput[]) => convex(inputs, 0.5)],
  ])('§4.6 %s: weights whose sum overflows keep every score finite and the order of their ratio', (_name, fuse) => {
    const dense: [number, number][] = [
      [1, 0.9],
      [2, 0.5],
      [3, 0.1],
    ];
    const sparse: [number, number][] = [
      [2, 10],
      [3, 4],
      [1, 0],
    ];
    const huge = fuse(lists(dense, sparse, [Number.MAX_VALUE, Number.MAX_VALUE]));
    for (const hit of huge) expect(Number.isFinite(hit.score), JSON.stringify(hit)).toBe(true);
    expect(huge.map((hit) => hit.label)).toEqual(fuse(lists(dense, sparse, [1, 1])).map((hit) => hit.label));
  });

  it('§4.6 weights that fit are used as given; past the bound they are scaled together by the largest', () => {
    const fitting = lists([[1, 1]], [[1, 1]], [2, 3]);
    expect(boundedWeights(fitting)).toBe(fitting);
    const scaled = boundedWeights(lists([[1, 1]], [[1, 1]], [2 ** 1023, 2 ** 1022]));
    expect(scaled.map((input) => input.weight)).toEqual([1, 0.5]);
  });
});

describe('§16.3 the shared arithmetic (the server over its recall lists, the gateway over its engines)', () => {
  it('rrfTerm: weight / (rrfK + 1-based rank), from a 0-based rank', () => {
    expect(rrfTerm(1, 60, 0)).toBe(1 / 61);
    expect(rrfTerm(2, 60, 3)).toBe(2 / 64);
  });

  it('normalise: (s - low) / (high - low); an empty interval maps to 1', () => {
    expect(normalise(5, 0, 10)).toBe(0.5);
    expect(normalise(0, SCORE_FLOOR.dense, 1)).toBe(0.5);
    expect(normalise(3, 3, 3)).toBe(1);
    expect(normalise(-1, SCORE_FLOOR.dense, SCORE_FLOOR.dense)).toBe(1);
    expect(scoreRange([2, -1, 7])).toEqual({ min: -1, max: 7 });
    expect(convexShares(0.25)).toEqual([0.25, 0.75]);
  });

  it('byFusedOrder: higher score, then higher summed weight, then the smaller id', () => {
    const sorted = [
      { id: 'b', score: 1, weight: 1 },
      { id: 'a', score: 1, weight: 1 },
      { id: 'c', score: 1, weight: 2 },
      { id: 'd', score: 2, weight: 1 },
    ].sort(byFusedOrder);
    expect(sorted.map((hit) => hit.id)).toEqual(['d', 'c', 'a', 'b']);
  });

  it.each([
    ['rrf', (inputs: FusionInput[]) => rrf(inputs, 60), { method: 'rrf', rrfK: 60 } as const],
    ['weighted', (inputs: FusionInput[]) => weighted(inputs), { method: 'weighted', rrfK: 60 } as const],
  ])('%s: the gateway fusing engines scores exactly as the server fusing lists', (_name, fuse, settings) => {
    const inputs = lists(
      [
        [1, 0.9],
        [2, 0.5],
        [3, 0.1],
      ],
      [
        [2, 10],
        [4, 4],
        [1, 0],
      ],
      [1, 2],
    );
    const server = fuse(inputs).map((hit) => [String(hit.label), hit.score]);
    const gateway = fuseEngines(
      inputs.map((input) => ({
        engine: input.name,
        weight: input.weight,
        hits: input.hits.map((hit) => ({ id: String(hit.label), score: hit.score })),
      })),
      settings,
    ).map((hit) => [hit.id, hit.score]);
    expect(gateway).toEqual(server);
  });
});
