import type { JsonObject } from '../protocol/messages.js';

/**
 * §16.3 fusion of per-engine ranked lists into one. Identity is the stringified `Hit.id`; when engines return the same
 * id the fused hit keeps the richest body (longest `text`) and merges `meta` (earlier engines win a conflicting key).
 * Ties break deterministically on (1) fused score, (2) summed weight, (3) the smaller id. Every fused hit names its
 * origin in `meta.engine` — the engine that ranked it best (the earlier engine on a tie) — with `meta.engineRank`
 * (1-based) and `meta.engineScore` from that engine.
 */
export type FederatedFusion = 'rrf' | 'weighted' | 'convex';

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
}

interface Candidate {
  readonly id: string;
  hit: JsonObject;
  score: number;
  weight: number;
  origin: { engine: string; rank: number; score: number };
  meta: JsonObject;
}

const scoreOf = (hit: JsonObject): number =>
  typeof hit.score === 'number' && Number.isFinite(hit.score) ? hit.score : 0;
const textLength = (hit: JsonObject): number => (typeof hit.text === 'string' ? hit.text.length : 0);
const metaOf = (hit: JsonObject): JsonObject =>
  typeof hit.meta === 'object' && hit.meta !== null && !Array.isArray(hit.meta) ? (hit.meta as JsonObject) : {};

/** The per-engine contribution of the hit at 0-based `rank` with raw `score` under `settings`. */
function contribution(list: EngineHits, rank: number, score: number, settings: FusionSettings, bounds: Bounds): number {
  switch (settings.method) {
    case 'rrf':
      return list.weight / (settings.rrfK + rank + 1);
    case 'weighted':
    case 'convex': {
      // weighted: min-max over the returned set; convex: the floor is the engine's theoretical minimum (§16.3).
      const low = settings.method === 'convex' ? (list.scoreFloor ?? bounds.min) : bounds.min;
      const span = bounds.max - low;
      return list.weight * (span > 0 ? (score - low) / span : 1);
    }
  }
}

interface Bounds {
  min: number;
  max: number;
}

export function fuseEngines(lists: readonly EngineHits[], settings: FusionSettings): JsonObject[] {
  const fused = new Map<string, Candidate>();
  for (const list of lists) {
    const scores = list.hits.map(scoreOf);
    const bounds = { min: Math.min(...scores), max: Math.max(...scores) };
    list.hits.forEach((hit, rank) => {
      const id = String(hit.id);
      const score = scores[rank] ?? 0;
      const part = contribution(list, rank, score, settings, bounds);
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
      seen.score += part;
      seen.weight += list.weight;
      if (rank + 1 < seen.origin.rank) seen.origin = { engine: list.engine, rank: rank + 1, score };
      seen.meta = { ...metaOf(hit), ...seen.meta };
      if (textLength(hit) > textLength(seen.hit)) seen.hit = hit;
    });
  }
  return [...fused.values()]
    .sort((a, b) => b.score - a.score || b.weight - a.weight || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((candidate) => ({
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
