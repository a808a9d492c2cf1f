import type { RequestContext } from '../protocol/context.js';
import { answerTooLarge, approximateBytes } from '../protocol/frames.js';
import type { JsonObject } from '../protocol/messages.js';
import type { TimeSlice } from '../protocol/time-slice.js';
import type { AnswerBudget } from './answer-budget.js';
import type { Scored } from './ranking.js';

export interface AnswerLimits {
  /** §15.5 the largest answer. */
  readonly maxResponseBytes: number;
  /** §15.5 hit bytes being built across all requests at once. */
  readonly answers: Pick<AnswerBudget, 'open'>;
}

/**
 * §15.5: hits (texts of up to a document each) are built only while the answer stays within its cap (-32013 past
 * it). Hits in flight across all requests share one budget (-32011 past it), released once the hits are built.
 * A hit whose chunk was deleted since recall (`build` gives undefined) is left out. Built in the caller's time slices.
 */
export async function buildHits(
  page: readonly Scored[],
  build: (hit: Scored) => JsonObject | undefined,
  limits: AnswerLimits,
  slice: TimeSlice,
): Promise<JsonObject[]> {
  const hits: JsonObject[] = [];
  let bytes = 0;
  const reservation = limits.answers.open();
  try {
    for (const hit of page) {
      const built = build(hit);
      if (built === undefined) continue; // deleted since recall
      const size = approximateBytes(built);
      bytes += size;
      if (bytes > limits.maxResponseBytes) throw answerTooLarge(limits.maxResponseBytes);
      reservation.take(size);
      hits.push(built);
      await slice.due();
    }
  } finally {
    reservation.release();
  }
  return hits;
}

/** What the pipeline did (§7.7 `usage`: effective counts, and notes for what it could not honour). */
export interface UsageFacts {
  /** Hits in the answer. */
  readonly hits: number;
  readonly candidates: number;
  readonly reranked: number;
  readonly tokens: number | undefined;
  readonly notes: string[];
  readonly mode: string;
  /** The fusion method, when recall gave more than one list to fuse. */
  readonly fusedBy: string | undefined;
  /** §6.1 the scale of this answer's scores (score-scale.ts). */
  readonly scoreScale: string;
  /** `performance.now()` when the request began. */
  readonly started: number;
}

/**
 * §7.7 `usage` for the answer; the same facts go to the request's log (§17.1): each note at `notice`, then one
 * `info` line saying what was served.
 */
export function reportUsage(facts: UsageFacts, ctx: Pick<RequestContext, 'log'>, now = performance.now()): JsonObject {
  const latencyMs = Math.round(now - facts.started);
  const usage: JsonObject = {
    candidates: facts.candidates,
    reranked: facts.reranked,
    latencyMs,
    ...(facts.tokens === undefined ? {} : { tokens: facts.tokens }),
    ...(facts.notes.length > 0 ? { notes: facts.notes } : {}),
    'x-rcp-server-scoreScale': facts.scoreScale,
  };
  for (const note of facts.notes) ctx.log('notice', note);
  const how = facts.fusedBy === undefined ? facts.mode : `${facts.mode}, ${facts.fusedBy}`;
  ctx.log('info', `${facts.hits} hits from ${facts.candidates} candidates (${how})`, { latencyMs });
  return usage;
}
