import { describe, expect, it } from 'vitest';
import { boundedWeights, convex, rrf, weighted, type FusionInput } from '../../../src/retrieval/fusion.js';

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
