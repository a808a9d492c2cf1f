/**
 * Maximal marginal relevance over candidate vectors: repeatedly pick the candidate maximising
 * λ · relevance − (1 − λ) · max cosine to those already picked. Relevance is the candidate's score min-max
 * normalised over the candidates, so λ trades like for like. Ties go to the earlier (better-ranked) candidate.
 */
export interface MmrCandidate {
  readonly score: number;
  readonly vector: Float32Array;
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na > 0 && nb > 0 ? dot / Math.sqrt(na * nb) : 0;
}

/** Indices of the chosen candidates, in pick order. */
export function mmr(candidates: readonly MmrCandidate[], k: number, lambda: number): number[] {
  const scores = candidates.map((c) => c.score);
  const min = Math.min(...scores);
  const max = Math.max(...scores);
  const relevance = scores.map((s) => (max > min ? (s - min) / (max - min) : 1));
  const picked: number[] = [];
  const closest = candidates.map(() => -Infinity);
  while (picked.length < Math.min(k, candidates.length)) {
    let best = -1;
    let bestValue = -Infinity;
    candidates.forEach((_, i) => {
      if (picked.includes(i)) return;
      const redundancy = picked.length === 0 ? 0 : closest[i]!;
      const value = lambda * relevance[i]! - (1 - lambda) * redundancy;
      if (value > bestValue) [best, bestValue] = [i, value];
    });
    picked.push(best);
    candidates.forEach((candidate, i) => {
      closest[i] = Math.max(closest[i]!, cosine(candidate.vector, candidates[best]!.vector));
    });
  }
  return picked;
}
