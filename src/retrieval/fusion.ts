/**
 * Hybrid fusion (§16.3) of ranked lists keyed by chunk label. Every method returns fused hits sorted by the §16.3
 * total order: (1) higher fused score, (2) higher summed weight of the lists that found it, (3) smaller stringified id.
 */
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
  /** The scoring function's theoretical minimum (cosine -1, BM25 0): the anchor of convex fusion. */
  readonly floor: number;
}

export type FusionMethod = 'rrf' | 'weighted' | 'convex';

/** How a fused label is named in results: the §16.3 tie-break compares these stringified ids. */
export type IdOf = (label: number) => string;

function order(
  hits: Map<number, { score: number; weight: number; scores: Record<string, number> }>,
  idOf: IdOf,
): FusedHit[] {
  const ids = new Map([...hits.keys()].map((label) => [label, idOf(label)]));
  const byId = (a: number, b: number) => {
    const [x, y] = [ids.get(a) ?? '', ids.get(b) ?? ''];
    return x < y ? -1 : x > y ? 1 : 0;
  };
  return [...hits]
    .sort(([a, x], [b, y]) => y.score - x.score || y.weight - x.weight || byId(a, b))
    .map(([label, { score, scores }]) => ({ label, score, scores }));
}

function accumulate(
  inputs: readonly FusionInput[],
  contribution: (input: FusionInput, hit: Ranked, rank: number) => number,
  idOf: IdOf,
): FusedHit[] {
  const fused = new Map<number, { score: number; weight: number; scores: Record<string, number> }>();
  for (const input of inputs) {
    input.hits.forEach((hit, rank) => {
      const entry = fused.get(hit.label) ?? { score: 0, weight: 0, scores: {} };
      entry.score += contribution(input, hit, rank);
      entry.weight += input.weight;
      entry.scores[input.name] = hit.score;
      fused.set(hit.label, entry);
    });
  }
  return order(fused, idOf);
}

/**
 * The most the weights may add up to. Every list's contribution to a fused score is at most its weight (RRF's
 * 1 / (rrfK + rank) and a normalised score are at most 1), so fused scores stay below this sum, with room for
 * rounding: finite, as §4.6 requires of every number on the wire.
 */
const MAX_WEIGHT_SUM = Number.MAX_VALUE / 4;

/**
 * The lists with their weights scaled down together, by the largest, when their sum would pass MAX_WEIGHT_SUM. A
 * weight only sets a list's share against the others, so the ranking is unchanged; any well-formed weight, however
 * large, is honoured rather than refused (§12: a large value is not an error).
 */
export function boundedWeights(inputs: readonly FusionInput[]): readonly FusionInput[] {
  const sum = inputs.reduce((total, input) => total + input.weight, 0);
  if (sum <= MAX_WEIGHT_SUM) return inputs;
  const largest = Math.max(...inputs.map((input) => input.weight));
  return inputs.map((input) => ({ ...input, weight: input.weight / largest }));
}

/** RRF(d) = Σ weight / (rrfK + rank), rank 1-based. */
export function rrf(inputs: readonly FusionInput[], rrfK: number, idOf: IdOf = String): FusedHit[] {
  return accumulate(boundedWeights(inputs), (input, _hit, rank) => input.weight / (rrfK + rank + 1), idOf);
}

/** Min-max per list over its returned set, then Σ weight · norm. */
export function weighted(inputs: readonly FusionInput[], idOf: IdOf = String): FusedHit[] {
  const lists = boundedWeights(inputs);
  const bounds = new Map(
    inputs.map((input) => {
      const scores = input.hits.map((hit) => hit.score);
      return [input.name, { min: Math.min(...scores), max: Math.max(...scores) }];
    }),
  );
  return accumulate(
    lists,
    (input, hit) => {
      const { min, max } = bounds.get(input.name) ?? { min: 0, max: 1 };
      return input.weight * (max > min ? (hit.score - min) / (max - min) : 1);
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
  const maxima = new Map(lists.map((input) => [input.name, Math.max(...input.hits.map((hit) => hit.score))]));
  const coefficient = (input: FusionInput, index: number) =>
    lists.length === 2 ? (index === 0 ? alpha : 1 - alpha) : input.weight;
  return accumulate(
    lists,
    (input, hit) => {
      const max = maxima.get(input.name) ?? input.floor;
      const norm = max > input.floor ? (hit.score - input.floor) / (max - input.floor) : 1;
      return coefficient(input, lists.indexOf(input)) * norm;
    },
    idOf,
  );
}
