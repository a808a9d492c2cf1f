import type { CorpusReader } from '../corpus/index.js';
import { documentIdOf } from './hits.js';
import type { Scored } from './ranking.js';
import type { Unit } from './retrieve-options.js';

/**
 * §7.7.2 `unit`: for `document`, each document is represented once, by its best-ranked chunk (whose score the
 * document hit carries); for `chunk`, the ranking is unchanged.
 */
export function groupUnits(ranked: Scored[], unit: Unit, corpus: Pick<CorpusReader, 'placeOf'>): Scored[] {
  if (unit !== 'document') return ranked;
  const seen = new Set<string>();
  return ranked.filter((hit) => {
    const doc = documentIdOf(corpus, hit.label);
    return !seen.has(doc) && seen.add(doc) !== undefined;
  });
}
