import type { RequestContext } from '../protocol/context.js';
import { convex, rrf, weighted, type FusedHit, type FusionInput, type IdOf } from './fusion.js';
import type { FusionPlan } from './retrieve-options.js';

/** A candidate as it moves through the retrieve pipeline: later stages rescore it and say so in `scores`. */
export interface Scored {
  readonly label: number;
  score: number;
  readonly scores: Record<string, number>;
}

/**
 * The recall lists as one ranking: the single list as it came, or the lists fused (§16.3) and cut to candidateK,
 * each hit keeping every list's raw score beside the fused one.
 */
export function rankLists(
  lists: readonly FusionInput[],
  fusion: Pick<FusionPlan, 'method' | 'rrfK' | 'alpha'>,
  candidateK: number,
  idOf: IdOf,
  ctx: Pick<RequestContext, 'progress'>,
): Scored[] {
  if (lists.length === 1) {
    const [only] = lists;
    return (only?.hits ?? []).map((hit) => ({
      label: hit.label,
      score: hit.score,
      scores: { [only?.name ?? 'dense']: hit.score },
    }));
  }
  // §16.3 ties break on the stringified hit id, as the client will see it.
  const fused: FusedHit[] =
    fusion.method === 'rrf'
      ? rrf(lists, fusion.rrfK, idOf)
      : fusion.method === 'weighted'
        ? weighted(lists, idOf)
        : convex(lists, fusion.alpha, idOf);
  const ranked = fused
    .slice(0, candidateK)
    .map((hit) => ({ label: hit.label, score: hit.score, scores: { ...hit.scores, fused: hit.score } }));
  ctx.progress('fuse', 0.45, { message: `${fusion.method} over ${lists.length} lists` });
  return ranked;
}

/** `minScore`: hits scoring below it are dropped (§7.7: fewer than k hits is allowed). */
export function atLeast(ranked: Scored[], minScore: number | undefined): Scored[] {
  return minScore === undefined ? ranked : ranked.filter((hit) => hit.score >= minScore);
}
