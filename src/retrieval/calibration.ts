/**
 * The statistics behind §7.7.2 `confidence` and the eval's noise estimate: isotonic regression (pool adjacent
 * violators), expected calibration error, and a seeded bootstrap over queries. Pure functions, no I/O.
 */

/** One judged hit: the score calibration reads, and whether the judgements call it relevant. */
export interface Observation {
  readonly x: number;
  readonly relevant: boolean;
}

/** A monotone step function as knots: x ascending, p non-decreasing in [0,1] (the table the server ships). */
export interface IsotonicFit {
  readonly x: number[];
  readonly p: number[];
}

/**
 * Isotonic regression of relevance on x (pool adjacent violators): the non-decreasing fit with the least squared
 * error. Each pooled block becomes knots at its smallest and largest x (one when they are equal), so a block keeps
 * its extent and interpolation only ramps between blocks. Ties in x are pooled first: equal scores, one probability.
 */
export function fitIsotonic(observations: readonly Observation[]): IsotonicFit {
  const sorted = [...observations].sort((a, b) => a.x - b.x);
  const blocks: { low: number; high: number; sumY: number; n: number }[] = [];
  for (let i = 0; i < sorted.length;) {
    const x = sorted[i]!.x;
    const block = { low: x, high: x, sumY: 0, n: 0 };
    for (; i < sorted.length && sorted[i]!.x === x; i++) {
      block.sumY += sorted[i]!.relevant ? 1 : 0;
      block.n += 1;
    }
    blocks.push(block);
    while (blocks.length > 1) {
      const last = blocks[blocks.length - 1]!;
      const before = blocks[blocks.length - 2]!;
      if (before.sumY / before.n < last.sumY / last.n) break;
      blocks.pop();
      before.high = last.high;
      before.sumY += last.sumY;
      before.n += last.n;
    }
  }
  const fit: IsotonicFit = { x: [], p: [] };
  for (const block of blocks) {
    const p = block.sumY / block.n;
    for (const x of block.low === block.high ? [block.low] : [block.low, block.high]) {
      fit.x.push(x);
      fit.p.push(p);
    }
  }
  return fit;
}

/**
 * The fitted probability at x: linear between knots, flat beyond the first and last (never extrapolated), clamped
 * to [0,1]. Monotone in x whenever the knots are. No knots: undefined (nothing to say).
 */
export function interpolate(fit: IsotonicFit, x: number): number | undefined {
  const { x: xs, p: ps } = fit;
  const n = Math.min(xs.length, ps.length);
  if (n === 0 || !Number.isFinite(x)) return undefined;
  let value: number;
  if (x <= xs[0]!) value = ps[0]!;
  else if (x >= xs[n - 1]!) value = ps[n - 1]!;
  else {
    let lo = 0;
    let hi = n - 1;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (xs[mid]! <= x) lo = mid;
      else hi = mid;
    }
    const span = xs[hi]! - xs[lo]!;
    const t = span > 0 ? (x - xs[lo]!) / span : 1;
    value = ps[lo]! + t * (ps[hi]! - ps[lo]!);
  }
  return Math.min(1, Math.max(0, value));
}

/**
 * Expected calibration error over `bins` equal-width bins of the predicted probability: Σ (n_b / n) · |mean
 * predicted − observed rate| in each bin.
 */
export function expectedCalibrationError(
  predictions: readonly { readonly p: number; readonly relevant: boolean }[],
  bins = 10,
): number {
  const sums = Array.from({ length: bins }, () => ({ p: 0, y: 0, n: 0 }));
  for (const { p, relevant } of predictions) {
    const bin = sums[Math.min(bins - 1, Math.max(0, Math.floor(p * bins)))]!;
    bin.p += p;
    bin.y += relevant ? 1 : 0;
    bin.n += 1;
  }
  const n = predictions.length;
  return n === 0 ? 0 : sums.reduce((total, bin) => total + (bin.n === 0 ? 0 : Math.abs(bin.p - bin.y) / n), 0);
}

/** A small seeded generator (mulberry32): the same seed, the same resamples, so a reported interval reproduces. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Interval {
  readonly mean: number;
  readonly low: number;
  readonly high: number;
}

/**
 * The mean of per-query values with a percentile bootstrap interval over queries (resampled with replacement,
 * `level` two-sided). For a paired comparison of two runs pass the per-query differences.
 */
export function bootstrapMean(values: readonly number[], resamples = 2000, level = 0.95, seed = 1): Interval {
  const n = values.length;
  const mean = n === 0 ? 0 : values.reduce((a, b) => a + b, 0) / n;
  if (n === 0) return { mean, low: 0, high: 0 };
  const random = seededRandom(seed);
  const means: number[] = [];
  for (let r = 0; r < resamples; r++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += values[Math.floor(random() * n)]!;
    means.push(sum / n);
  }
  means.sort((a, b) => a - b);
  const tail = (1 - level) / 2;
  const at = (q: number) => means[Math.min(resamples - 1, Math.max(0, Math.floor(q * resamples)))]!;
  return { mean, low: at(tail), high: at(1 - tail) };
}

/** Query ids split into k folds, deterministically (seeded shuffle): cross-validation by query, never by hit. */
export function foldsByQuery(queries: readonly string[], k: number, seed = 1): string[][] {
  const order = [...queries].sort();
  const random = seededRandom(seed);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return Array.from({ length: k }, (_, fold) => order.filter((_, i) => i % k === fold));
}
