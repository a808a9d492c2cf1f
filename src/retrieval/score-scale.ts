import type { JsonObject } from '../protocol/messages.js';
import type { SCORE_SCALES } from '../protocol/schemas/vocabulary.js';
import type { Mode } from './retrieve-options.js';

/**
 * §6.1 `scoreScale`: what a `Hit.score` of this server is, per pipeline. A dense score is the vectors' similarity
 * (`cosine`, or `dot` for an inner-product index); a sparse score is BM25; a fused score (RRF's rank sum, or scores
 * min-max normalised over the returned set) and a reranked answer (rerank scores ahead of recall scores) are
 * relative to the answer they are in, so `unbounded`; recency multiplies a score by its age's decay, which leaves no
 * named scale either. §6.1 makes the label informational only: scores of two servers are never compared by it.
 */
export type ScoreScale = (typeof SCORE_SCALES)[number];

/** The index space of the dense index (`index.space`). */
export type Space = 'cosine' | 'ip';

export interface ScoredPipeline {
  readonly mode: Mode;
  readonly reranked: boolean;
  readonly recency: boolean;
}

/** The scale of the scores one answer carries. */
export function scoreScaleOf(pipeline: ScoredPipeline, space: Space): ScoreScale {
  if (pipeline.reranked || pipeline.recency || pipeline.mode === 'hybrid') return 'unbounded';
  if (pipeline.mode === 'sparse') return 'bm25';
  return space === 'cosine' ? 'cosine' : 'dot';
}

/**
 * §6.1 advertised: `scoreScale` is the scale of what a request gets by default (no rerank, no recency), and
 * `x-rcp-server-scoreScales` the scale of each mode, since one server's scale differs by mode (§6.2: a vendor field).
 * Each answer states its own in `usage["x-rcp-server-scoreScale"]`.
 */
export function advertisedScales(defaultMode: Mode, space: Space): JsonObject {
  const of = (mode: Mode) => scoreScaleOf({ mode, reranked: false, recency: false }, space);
  return {
    scoreScale: of(defaultMode),
    'x-rcp-server-scoreScales': { dense: of('dense'), sparse: of('sparse'), hybrid: of('hybrid') },
  };
}
