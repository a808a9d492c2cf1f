import { isJsonObject, type JsonObject } from '../protocol/messages.js';
import {
  byFusedOrder,
  convexShares,
  normalise,
  rrfTerm,
  SCORE_FLOOR,
  scoreRange,
  type Ordered,
} from '../retrieval/fusion.js';

/**
 * §16.3 fusion of per-engine ranked lists into one; the arithmetic (RRF, min-max and floor-anchored normalisation,
 * the convex shares, the total order) is src/retrieval/fusion.ts's, shared with the server's own fusion. This file
 * keeps what is particular to merging engines' answers. Identity is the stringified `Hit.id`; when engines return the same
 * id the fused hit keeps the richest body (longest `text`) and merges `meta` (earlier engines win a conflicting key).
 * Ties break deterministically on (1) fused score, (2) summed weight, (3) the smaller id. Every fused hit names its
 * origin in `meta.engine` — the engine that ranked it best (the earlier engine on a tie) — with `meta.engineRank`
 * (1-based) and `meta.engineScore` from that engine.
 */
export type FederatedFusion = 'rrf' | 'weighted' | 'convex' | 'shards';

export interface EngineHits {
  readonly engine: string;
  readonly weight: number;
  readonly hits: readonly JsonObject[];
  /** The engine's advertised `retrieve.scoreFloor` (§6.1); convex needs it from every engine. */
  readonly scoreFloor?: number | undefined;
}

export interface FusionSettings {
  readonly method: FederatedFusion;
  readonly rrfK: number;
  /** `shards`: the dense share of the convex combination (the request's `fusion.alpha`, default 0.5). */
  readonly alpha?: number | undefined;
}

interface Candidate extends Ordered {
  hit: JsonObject;
  score: number;
  weight: number;
  origin: { engine: string; rank: number; score: number };
  meta: JsonObject;
}

const scoreOf = (hit: JsonObject): number =>
  typeof hit.score === 'number' && Number.isFinite(hit.score) ? hit.score : 0;
const textLength = (hit: JsonObject): number => (typeof hit.text === 'string' ? hit.text.length : 0);
const metaOf = (hit: JsonObject): JsonObject => (isJsonObject(hit.meta) ? hit.meta : {});

/** The per-engine contribution of the hit at 0-based `rank` with raw `score` under `settings`. */
function contribution(list: EngineHits, rank: number, score: number, settings: FusionSettings, bounds: Bounds): number {
  switch (settings.method) {
    case 'rrf':
      return rrfTerm(list.weight, settings.rrfK, rank);
    case 'shards': // scored globally, never per engine
    case 'weighted':
    case 'convex': {
      // weighted: min-max over the returned set; convex: the floor is the engine's theoretical minimum (§16.3).
      const low = settings.method === 'convex' ? (list.scoreFloor ?? bounds.min) : bounds.min;
      return list.weight * normalise(score, low, bounds.max);
    }
  }
}

type Bounds = ReturnType<typeof scoreRange>;

/**
 * `shards` — not one of §16.3's strategies, and only for engines that are shards of one corpus (same encoder, same
 * scoring): per-engine normalisation maps every shard's best hit to the same value, so RRF, weighted and convex
 * interleave shards instead of ranking documents. This re-fuses from the per-list scores each hit carries
 * (`scores.dense` cosine, `scores.sparse` BM25, `scores.rerank`) against the maxima over all shards — the convex
 * combination the single index would have computed. The gateway uses it only when every engine advertises the same
 * `embed.identity`.
 */
function globalScores(lists: readonly EngineHits[], alpha: number): Map<JsonObject, number> {
  const part = (hit: JsonObject, name: string): number | undefined => {
    const scores = hit.scores;
    const value = typeof scores === 'object' && scores !== null ? (scores as JsonObject)[name] : undefined;
    return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
  };
  const all = lists.flatMap((list) => list.hits);
  const result = new Map<JsonObject, number>();
  if (all.length > 0 && all.every((hit) => part(hit, 'rerank') !== undefined)) {
    for (const hit of all) result.set(hit, part(hit, 'rerank') ?? 0);
    return result;
  }
  const maxOf = (name: string) => Math.max(-Infinity, ...all.map((hit) => part(hit, name) ?? -Infinity));
  const [maxDense, maxSparse] = [maxOf('dense'), maxOf('sparse')];
  const [shareDense, shareSparse] = convexShares(alpha);
  const hasDense = Number.isFinite(maxDense);
  const hasSparse = Number.isFinite(maxSparse);
  for (const hit of all) {
    const dense = part(hit, 'dense');
    const sparse = part(hit, 'sparse');
    const normDense = dense === undefined ? 0 : normalise(dense, SCORE_FLOOR.dense, maxDense);
    const normSparse = sparse === undefined ? 0 : normalise(sparse, SCORE_FLOOR.sparse, maxSparse);
    const score =
      hasDense && hasSparse
        ? shareDense * normDense + shareSparse * normSparse
        : hasDense
          ? normDense
          : hasSparse
            ? normSparse
            : scoreOf(hit);
    result.set(hit, score);
  }
  return result;
}

export function fuseEngines(lists: readonly EngineHits[], settings: FusionSettings): JsonObject[] {
  const fused = new Map<string, Candidate>();
  const global = settings.method === 'shards' ? globalScores(lists, settings.alpha ?? 0.5) : undefined;
  for (const list of lists) {
    const scores = list.hits.map(scoreOf);
    const bounds = scoreRange(scores);
    list.hits.forEach((hit, rank) => {
      const id = String(hit.id);
      const score = scores[rank] ?? 0;
      const part = global?.get(hit) ?? contribution(list, rank, score, settings, bounds);
      const seen = fused.get(id);
      if (seen === undefined) {
        fused.set(id, {
          id,
          hit,
          score: part,
          weight: list.weight,
          origin: { engine: list.engine, rank: rank + 1, score },
          meta: { ...metaOf(hit) },
        });
        return;
      }
      // Shards hold each document once; should two return it, its better score stands.
      seen.score = global === undefined ? seen.score + part : Math.max(seen.score, part);
      seen.weight += list.weight;
      if (rank + 1 < seen.origin.rank) seen.origin = { engine: list.engine, rank: rank + 1, score };
      seen.meta = { ...metaOf(hit), ...seen.meta };
      if (textLength(hit) > textLength(seen.hit)) seen.hit = hit;
    });
  }
  return [...fused.values()].sort(byFusedOrder).map((candidate) => ({
    ...candidate.hit,
    score: candidate.score,
    meta: {
      ...candidate.meta,
      engine: candidate.origin.engine,
      engineRank: candidate.origin.rank,
      engineScore: candidate.origin.score,
    },
  }));
}
