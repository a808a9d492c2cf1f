import { describe, expect, it } from 'vitest';
import { mmr, type MmrCandidate } from '../../../src/retrieval/mmr.js';

/** §7.7 `mmr`: maximal marginal relevance, greedy, prefix-stable, time-sliced. */
const v = (...xs: number[]) => Float32Array.from(xs);

describe('mmr', () => {
  const candidates: MmrCandidate[] = [
    { score: 1.0, vector: v(1, 0, 0) },
    { score: 0.95, vector: v(0.99, 0.1, 0) }, // a near-duplicate of the first
    { score: 0.9, vector: v(0, 1, 0) },
    { score: 0.5, vector: v(0, 0, 1) },
  ];

  it.each([
    { lambda: 1, expected: [0, 1, 2, 3] }, // relevance only: score order
    { lambda: 0.5, expected: [0, 2, 3, 1] }, // the near-duplicate falls behind the diverse ones
  ])('λ $lambda picks $expected', async ({ lambda, expected }) => {
    expect(await mmr(candidates, candidates.length, lambda)).toEqual(expected);
  });

  it('makes only the picks asked for: the rest follow in their given order, and picks are a prefix of a longer run', async () => {
    const all = await mmr(candidates, 4, 0.5);
    const two = await mmr(candidates, 2, 0.5);
    expect(two.slice(0, 2)).toEqual(all.slice(0, 2));
    expect(two.slice(2)).toEqual([1, 3].filter((i) => !two.slice(0, 2).includes(i)).sort((a, b) => a - b));
    expect([...two].sort()).toEqual([0, 1, 2, 3]);
  });

  it('lets the event loop run during a large selection, and stops when the request is aborted', async () => {
    const random = (d: number) => Float32Array.from({ length: d }, () => Math.random() - 0.5);
    const many = Array.from({ length: 1000 }, (_, i) => ({ score: 1 - i / 1000, vector: random(512) }));
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    await mmr(many, 200, 0.5);
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(0);
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    await expect(mmr(many, 200, 0.5, controller.signal)).rejects.toThrow('gone');
  });
});
