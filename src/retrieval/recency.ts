import type { CorpusReader } from '../corpus/index.js';
import { documentIdOf } from './hits.js';
import type { Scored } from './ranking.js';

const DAY_MS = 86_400_000;

export interface Recency {
  /** A declared `date` field of the documents' metadata (checked with the options). */
  readonly field: string;
  readonly halfLifeDays: number;
}

/**
 * `recency` (§7.7): halve the score every halfLifeDays of age; undated documents keep theirs. A date in the future
 * counts as age 0. Rescores in place (noting the decay in `scores.recency`) and re-sorts, ties on the smaller label.
 * Without `recency` the ranking is returned untouched.
 */
export function applyRecency(
  ranked: Scored[],
  recency: Recency | undefined,
  corpus: Pick<CorpusReader, 'placeOf' | 'metaOf'>,
  now = Date.now(),
): Scored[] {
  if (recency === undefined) return ranked;
  const { field, halfLifeDays } = recency;
  for (const hit of ranked) {
    const value = corpus.metaOf(documentIdOf(corpus, hit.label))[field];
    const time = typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : NaN;
    if (Number.isNaN(time)) continue;
    const decay = 0.5 ** (Math.max(0, now - time) / DAY_MS / halfLifeDays);
    hit.scores.recency = decay;
    hit.score *= decay;
  }
  ranked.sort((a, b) => b.score - a.score || a.label - b.label);
  return ranked;
}
