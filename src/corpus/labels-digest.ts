/**
 * What a set of chunk labels comes to, in a few numbers: how a loaded dense index is checked against the store's
 * chunks without listing a million labels on each side (docs/architecture.md §5). Count, sum, and the sum of squares
 * modulo a prime small enough that every term is exact in a double: a file whose labels are not the store's (rows
 * relabelled since, a store restored under newer files) differs in one of them. It guards against accidents, not
 * forgery (as the files' sums do).
 */
export interface LabelsDigest {
  readonly count: number;
  readonly sum: number;
  readonly squares: number;
}

const MODULUS = 65_521;

/** The same digest, computed by SQL over a table's `label` column. */
export const LABELS_DIGEST_SQL =
  `SELECT count(*) AS count, coalesce(sum(label), 0) AS sum, ` +
  `coalesce(sum((label % ${MODULUS}) * (label % ${MODULUS})), 0) AS squares FROM chunks`;

export function labelsDigest(labels: Iterable<number>): LabelsDigest {
  let count = 0;
  let sum = 0;
  let squares = 0;
  for (const label of labels) {
    const low = label % MODULUS;
    count++;
    sum += label;
    squares += low * low;
  }
  return { count, sum, squares };
}

export function sameDigest(a: LabelsDigest, b: LabelsDigest): boolean {
  return a.count === b.count && a.sum === b.sum && a.squares === b.squares;
}
