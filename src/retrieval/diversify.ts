import type { CorpusReader } from '../corpus/index.js';
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
  corpus: Pick<CorpusReader, 'vectorsOf'>,
  signal: AbortSignal,
): Promise<Scored[]> {
  const vectors = await corpus.vectorsOf(
    ranked.map((hit) => hit.label),
    signal,
  );
  const candidates: MmrCandidate[] = ranked.map((hit) => ({
    score: hit.score,
    vector: vectors.get(hit.label) ?? new Float32Array(0),
  }));
  const order = await mmr(candidates, picks, lambda, signal);
  return order.map((i) => ranked[i]!);
}
