import { TimeSlice } from '../protocol/time-slice.js';
import { dotProduct } from '../protocol/vectors.js';

/**
 * Maximal marginal relevance over candidate vectors: repeatedly pick the candidate maximising
 * λ · relevance − (1 − λ) · max cosine to those already picked. Relevance is the candidate's score min-max
 * normalised over the candidates, so λ trades like for like. Ties go to the earlier (better-ranked) candidate.
 *
 * O(picks · n · d): each candidate's highest similarity to the picked set is kept up to date with one dot product per
 * pick (vectors are normalised once), and only the picks a page needs are made — greedy picks are a prefix of any
 * longer run, so the rest keep their order behind them. The loop is time-sliced: it never holds the event loop.
 */
export interface MmrCandidate {
  readonly score: number;
  readonly vector: Float32Array;
}

function normalised(vector: Float32Array): Float32Array {
  let norm = 0;
  for (let i = 0; i < vector.length; i++) norm += vector[i]! * vector[i]!;
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  const unit = new Float32Array(vector.length);
  for (let i = 0; i < vector.length; i++) unit[i] = vector[i]! * scale;
  return unit;
}

/** Indices of all candidates: the first `picks` in MMR order, then the rest in their given order. */
export async function mmr(
  candidates: readonly MmrCandidate[],
  picks: number,
  lambda: number,
  signal?: AbortSignal,
): Promise<number[]> {
  const slice = new TimeSlice(signal);
  let min = Infinity;
  let max = -Infinity;
  for (const { score } of candidates) [min, max] = [Math.min(min, score), Math.max(max, score)];
  const relevance = candidates.map(({ score }) => (max > min ? (score - min) / (max - min) : 1));
  const unit: Float32Array[] = [];
  for (const { vector } of candidates) {
    unit.push(normalised(vector));
    await slice.due();
  }
  const closest = new Float64Array(candidates.length).fill(-Infinity);
  const taken = new Uint8Array(candidates.length);
  const order: number[] = [];
  while (order.length < Math.min(picks, candidates.length)) {
    let best = -1;
    let bestValue = -Infinity;
    for (let i = 0; i < candidates.length; i++) {
      if (taken[i] === 1) continue;
      const redundancy = order.length === 0 ? 0 : closest[i]!;
      const value = lambda * relevance[i]! - (1 - lambda) * redundancy;
      if (value > bestValue) [best, bestValue] = [i, value];
    }
    taken[best] = 1;
    order.push(best);
    for (let i = 0; i < candidates.length; i++) {
      if (taken[i] === 0) closest[i] = Math.max(closest[i]!, dotProduct(unit[i]!, unit[best]!));
    }
    await slice.due();
  }
  for (let i = 0; i < candidates.length; i++) if (taken[i] === 0) order.push(i);
  return order;
}
