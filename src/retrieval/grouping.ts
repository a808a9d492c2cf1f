import type { CorpusReader } from '../corpus/index.js';
import type { JsonObject } from '../protocol/messages.js';
import { hitId } from './hits.js';
import type { Scored } from './ranking.js';
import type { Unit } from './retrieve-options.js';

/**
 * §7.7.2 `unit`: a `document` or a `page` is represented once, by its best-ranked chunk (whose score the hit
 * carries); for `chunk` and `passage` (one window of each chunk) the ranking is unchanged.
 */
export function groupUnits(
  ranked: Scored[],
  unit: Unit,
  corpus: Pick<CorpusReader, 'placeOf' | 'getChunk' | 'outlineOf'>,
): Scored[] {
  if (unit === 'chunk' || unit === 'passage') return ranked;
  const seen = new Set<string>();
  return ranked.filter((hit) => {
    const id = hitId(corpus, hit.label, unit);
    return !seen.has(id) && seen.add(id) !== undefined;
  });
}

/**
 * The hits with each id once, the first kept: a page hit names the page its chunk's focus lies on (units.ts), which
 * another chunk's hit on the same page may name too.
 */
export function uniqueIds(hits: readonly JsonObject[]): JsonObject[] {
  const seen = new Set<unknown>();
  return hits.filter((hit) => !seen.has(hit.id) && seen.add(hit.id) !== undefined);
}
