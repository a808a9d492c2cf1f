import type { CorpusReader } from '../backend/ports.js';
import { TimeSlice } from '../protocol/time-slice.js';
import { mmr, type MmrCandidate } from './mmr.js';
import type { Scored } from './ranking.js';

/**
 * `mmr` (§7.7): the ranking reordered by maximal marginal relevance over each candidate's stored vector, making the
 * `picks` a page needs (offset + k); the rest keep their order behind them. A candidate without a vector (deleted
 * since) is compared as an empty one.
 */
export async function diversify(
  ranked: Scored[],
  picks: number,
  lambda: number,
  corpus: Pick<CorpusReader, 'vectorOf'>,
  signal: AbortSignal,
): Promise<Scored[]> {
  // A stored vector per candidate (up to maxCandidates store reads): read in time slices.
  const slice = new TimeSlice(8, signal);
  const candidates: MmrCandidate[] = [];
  for (const hit of ranked) {
    candidates.push({ score: hit.score, vector: corpus.vectorOf(hit.label) ?? new Float32Array(0) });
    await slice.due();
  }
  const order = await mmr(candidates, picks, lambda, signal);
  return order.map((i) => ranked[i]!);
}
