/**
 * Fusion (§16.3): the one home of its arithmetic. Two callers fuse ranked lists with it: the server's retrieve, over
 * its recall lists keyed by chunk label (rrf, weighted and convex below), and the gateway, over its engines' answers
 * keyed by hit id (src/gateway/federated-fusion.ts, which adds only what is particular to merging engines: identity
 * across engines, provenance, the `shards` re-fusion). Every fusion returns hits sorted by the §16.3 total order:
 * (1) higher fused score, (2) higher summed weight of the lists that found it, (3) smaller stringified id.
 */

/** Each scoring function's theoretical minimum (cosine -1, BM25 0): the floor a convex normalisation anchors at. */
export const SCORE_FLOOR = { dense: -1, sparse: 0 } as const;

/** One list's RRF share for the hit at 0-based `rank`: weight / (rrfK + 1-based rank). */
export function rrfTerm(weight: number, rrfK: number, rank: number): number {
  return weight / (rrfK + rank + 1);
}

/** The smallest and largest score of a list: the min-max interval of weighted fusion. */
export function scoreRange(scores: readonly number[]): { readonly min: number; readonly max: number } {
  return { min: Math.min(...scores), max: Math.max(...scores) };
}

/**
 * A score mapped onto [low, high] → [0, 1]: (score - low) / (high - low). `low` is the list's smallest returned score
 * (weighted: min-max) or its scoring function's floor (convex, TM2C2); an empty interval (every hit scored alike, or
 * the best at the floor) maps to 1.
 */
export function normalise(score: number, low: number, high: number): number {
  return high > low ? (score - low) / (high - low) : 1;
}

/** The convex combination's coefficients of its two lists, in order: α and 1 - α. */
export function convexShares(alpha: number): readonly [number, number] {
  return [alpha, 1 - alpha];
}

/** A fused candidate as the §16.3 order sees it. */
export interface Ordered {
  readonly score: number;
  /** The summed weight of the lists that found it. */
  readonly weight: number;
  /** Its stringified id, as the client will see it. */
  readonly id: string;
}

/** The §16.3 total order: higher fused score, then higher summed weight, then the smaller stringified id. */
export function byFusedOrder(a: Ordered, b: Ordered): number {
  return b.score - a.score || b.weight - a.weight || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * The most the weights may add up to. Every list's contribution to a fused score is at most its weight (RRF's
 * 1 / (rrfK + rank) and a normalised score are at most 1), so fused scores stay below this sum, with room for
 * rounding: finite, as §4.6 requires of every number on the wire.
 */
const MAX_WEIGHT_SUM = Number.MAX_VALUE / 4;

/**
 * The weights scaled down together, by the largest, when their sum would pass MAX_WEIGHT_SUM. A weight only sets a
 * list's share against the others, so the ranking is unchanged; any well-formed weight, however large, is honoured
 * rather than refused (§12: a large value is not an error).
 */
export function boundedWeights<T extends { readonly weight: number }>(inputs: readonly T[]): readonly T[] {
  const sum = inputs.reduce((total, input) => total + input.weight, 0);
  if (sum <= MAX_WEIGHT_SUM) return inputs;
  const largest = Math.max(...inputs.map((input) => input.weight));
  return inputs.map((input) => ({ ...input, weight: input.weight / largest }));
}

// The server's fusion of its recall lists (§16.3), keyed by chunk label.

export interface Ranked {
  readonly label: number;
  readonly score: number;
}

export interface FusedHit {
  readonly label: number;
  readonly score: number;
  /** Each input list's raw score for this hit, by list name (`dense`, `sparse`). */
  readonly scores: Readonly<Record<string, number>>;
}

export interface FusionInput {
  readonly name: string;
  readonly weight: number;
  readonly hits: readonly Ranked[];
  /** The scoring function's theoretical minimum (SCORE_FLOOR): the anchor of convex fusion. */
  readonly floor: number;
}

export type FusionMethod = 'rrf' | 'weighted' | 'convex';

/** How a fused label is named in results: the §16.3 tie-break compares these stringified ids. */
export type IdOf = (label: number) => string;

interface Fused {
  readonly label: number;
  readonly id: string;
  score: number;
  weight: number;
  readonly scores: Record<string, number>;
}

function accumulate(
  inputs: readonly FusionInput[],
  contribution: (input: FusionInput, hit: Ranked, rank: number) => number,
  idOf: IdOf,
): FusedHit[] {
  const fused = new Map<number, Fused>();
  for (const input of inputs) {
    input.hits.forEach((hit, rank) => {
      const entry = fused.get(hit.label) ?? { label: hit.label, id: idOf(hit.label), score: 0, weight: 0, scores: {} };
      entry.score += contribution(input, hit, rank);
      entry.weight += input.weight;
      entry.scores[input.name] = hit.score;
      fused.set(hit.label, entry);
    });
  }
  return [...fused.values()].sort(byFusedOrder).map(({ label, score, scores }) => ({ label, score, scores }));
}

/** RRF(d) = Σ weight / (rrfK + rank), rank 1-based. */
export function rrf(inputs: readonly FusionInput[], rrfK: number, idOf: IdOf = String): FusedHit[] {
  return accumulate(boundedWeights(inputs), (input, _hit, rank) => rrfTerm(input.weight, rrfK, rank), idOf);
}

/** Min-max per list over its returned set, then Σ weight · norm. */
export function weighted(inputs: readonly FusionInput[], idOf: IdOf = String): FusedHit[] {
  const ranges = new Map(inputs.map((input) => [input.name, scoreRange(input.hits.map((hit) => hit.score))]));
  return accumulate(
    boundedWeights(inputs),
    (input, hit) => {
      const { min, max } = ranges.get(input.name) ?? { min: 0, max: 1 };
      return input.weight * normalise(hit.score, min, max);
    },
    idOf,
  );
}

/**
 * Convex combination anchored at each list's declared floor (TM2C2): norm = (s - floor) / (max - floor), fused =
 * α · norm(first) + (1 - α) · norm(second). With more or fewer than two lists, the weights stand in for α.
 */
export function convex(inputs: readonly FusionInput[], alpha: number, idOf: IdOf = String): FusedHit[] {
  const lists = boundedWeights(inputs);
  const maxima = new Map(lists.map((input) => [input.name, scoreRange(input.hits.map((hit) => hit.score)).max]));
  const shares = convexShares(alpha);
  const coefficient = (input: FusionInput, index: number) =>
    lists.length === 2 ? (index === 0 ? shares[0] : shares[1]) : input.weight;
  return accumulate(
    lists,
    (input, hit) =>
      coefficient(input, lists.indexOf(input)) *
      normalise(hit.score, input.floor, maxima.get(input.name) ?? input.floor),
    idOf,
  );
}
