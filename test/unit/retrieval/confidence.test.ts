import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  bootstrapMean,
  expectedCalibrationError,
  fitIsotonic,
  foldsByQuery,
  interpolate,
} from '../../../src/retrieval/calibration.js';
import {
  confidenceOf,
  loadTables,
  parseTable,
  SHIPPED_TABLES,
  tablesFor,
  withConfidence,
  type CalibrationTable,
  type RequestPipeline,
} from '../../../src/retrieval/confidence.js';

const PIPELINE = {
  encoder: 'enc#1',
  space: 'cosine',
  bm25: { k1: 1.2, b: 0.75, stem: true },
  mode: 'hybrid',
  fusion: 'convex',
  alpha: 0.5,
} as const;

const TABLE: CalibrationTable = {
  about: 'test',
  pipeline: PIPELINE,
  feature: 'fused',
  x: [0.5, 0.8, 0.9, 1],
  p: [0, 0.1, 0.4, 0.9],
};

const FUSION = { method: 'convex', alpha: 0.5, rrfK: 60, weights: {} } as const;
const DEFAULT_REQUEST: RequestPipeline = { mode: 'hybrid', fusion: FUSION, reranked: false, lists: 2 };

/** Tables of the same scoring for the dense mode and for rrf fusion. */
const DENSE: CalibrationTable = { ...TABLE, pipeline: { ...PIPELINE, mode: 'dense' }, feature: 'dense' };
const RRF: CalibrationTable = { ...TABLE, pipeline: { ...PIPELINE, fusion: 'rrf', rrfK: 60 }, x: [0, 1], p: [0, 1] };

const fused = (score: number) => ({ scores: { dense: 0.3, sparse: 4, fused: score } });

describe('§7.7.2 confidence: a calibrated probability per hit', () => {
  const confidence = confidenceOf([TABLE], DEFAULT_REQUEST)!;

  it.each([
    [-5, 0],
    [0.5, 0],
    [0.65, 0.05],
    [0.8, 0.1],
    [0.95, 0.65],
    [1, 0.9],
    [7, 0.9],
  ])('§7.7.2 a fused score of %d reads as %d (linear between knots, flat beyond them)', (score, expected) => {
    expect(confidence(fused(score))).toBeCloseTo(expected, 10);
  });

  it('§7.7.2 is monotone in the fused score and within [0,1]', () => {
    let previous = -Infinity;
    for (let score = -2; score <= 3; score += 0.01) {
      const value = confidence(fused(score))!;
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThanOrEqual(1);
      expect(value).toBeGreaterThanOrEqual(previous);
      previous = value;
    }
  });

  it('§7.7.2 is absent for a hit without a fused score, and for a score that is not a number', () => {
    expect(confidence({ scores: { dense: 0.9 } })).toBeUndefined();
    expect(confidence(fused(Number.NaN))).toBeUndefined();
  });

  it.each<[string, Partial<RequestPipeline>]>([
    ['dense mode', { mode: 'dense', lists: 1 }],
    ['sparse mode', { mode: 'sparse', lists: 1 }],
    ['rrf fusion', { fusion: { ...FUSION, method: 'rrf' } }],
    ['weighted fusion', { fusion: { ...FUSION, method: 'weighted' } }],
    ['another alpha', { fusion: { ...FUSION, alpha: 0.7 } }],
    ['a rerank', { reranked: true }],
    ['one list fused', { lists: 1 }],
  ])('§7.7.2 is absent for a pipeline the table was not fitted on: %s', (_, change) => {
    expect(confidenceOf([TABLE], { ...DEFAULT_REQUEST, ...change })).toBeUndefined();
  });

  it('§7.7.2 is absent without a table', () => {
    expect(confidenceOf([], DEFAULT_REQUEST)).toBeUndefined();
  });

  it('§7.7.2 each pipeline reads its own table, at its own score', () => {
    const tables = [TABLE, DENSE, RRF];
    const hit = { scores: { dense: 0.95, sparse: 4, fused: 0.5 } };
    expect(confidenceOf(tables, DEFAULT_REQUEST)!(hit)).toBe(0);
    expect(confidenceOf(tables, { ...DEFAULT_REQUEST, mode: 'dense', lists: 1 })!(hit)).toBeCloseTo(0.65, 10);
    expect(confidenceOf(tables, { ...DEFAULT_REQUEST, fusion: { ...FUSION, method: 'rrf' } })!(hit)).toBe(0.5);
  });

  it.each<[string, Partial<RequestPipeline>]>([
    ['another rrfK', { fusion: { ...FUSION, method: 'rrf', rrfK: 10 } }],
    ['custom weights', { fusion: { ...FUSION, method: 'rrf', weights: { dense: 2 } } }],
    ['the dense mode reranked', { mode: 'dense', lists: 1, reranked: true }],
    ['an expanded lexical query', { fusion: { ...FUSION, method: 'rrf' }, expanded: true }],
  ])('§7.7.2 rrf and dense tables hold only for their pipeline: not for %s', (_, change) => {
    expect(confidenceOf([DENSE, RRF], { ...DEFAULT_REQUEST, ...change })).toBeUndefined();
  });

  it.each<[string, object]>([
    ['another encoder', { encoder: 'enc#2' }],
    ['inner-product space', { space: 'ip' }],
    ['other BM25 parameters', { bm25: { k1: 0.9, b: 0.4, stem: true } }],
    ['no stemming', { bm25: { k1: 1.2, b: 0.75, stem: false } }],
  ])('§6.1 a table fitted on other scoring holds nothing for this server (%s)', (_, change) => {
    expect(tablesFor([TABLE, DENSE], { ...PIPELINE, ...change })).toEqual([]);
  });

  it('§6.1 the tables fitted on what this server serves hold', () => {
    expect(tablesFor([TABLE, DENSE], PIPELINE)).toEqual([TABLE, DENSE]);
  });

  it('§7.7.2 the hit carries it only when there is one', () => {
    expect(withConfidence({ id: 'a', score: 1 }, 0.25)).toEqual({ id: 'a', score: 1, confidence: 0.25 });
    expect(withConfidence({ id: 'a', score: 1 }, undefined)).toEqual({ id: 'a', score: 1 });
    expect(withConfidence(undefined, 0.25)).toBeUndefined();
  });
});

describe('confidence tables', () => {
  it.each<[string, object, RegExp]>([
    ['another feature', { feature: 'rank' }, /feature/],
    ['no knots', { x: [], p: [] }, /arrays/],
    ['lengths differ', { x: [0, 1], p: [0.5] }, /arrays/],
    ['x descending', { x: [1, 0], p: [0, 1] }, /ascend/],
    ['p decreasing', { x: [0, 1], p: [0.6, 0.5] }, /non-decreasing/],
    ['p above 1', { x: [0, 1], p: [0.5, 1.5] }, /non-decreasing/],
    ['p below 0', { x: [0, 1], p: [-0.1, 0.5] }, /non-decreasing/],
    ['a knot not a number', { x: [0, '1'], p: [0, 1] }, /numbers/],
    ['no pipeline', { pipeline: undefined }, /pipeline/],
  ])('a table with %s is refused, saying why', (_, change, why) => {
    expect(() => parseTable(JSON.stringify({ ...TABLE, ...change }), 't.json')).toThrow(why);
  });

  it('`none` loads no table', () => {
    expect(loadTables('none')).toEqual([]);
  });

  it('the shipped tables are valid monotone fits: dense, sparse, and hybrid by convex, rrf and weighted', () => {
    const tables = loadTables('');
    const file = join(SHIPPED_TABLES, 'hybrid-convex-use-lite.json');
    expect(tables).toContainEqual(parseTable(readFileSync(file, 'utf8'), file));
    expect(
      tables.map(({ pipeline: { mode, fusion }, feature }) => [mode, mode === 'hybrid' ? fusion : '', feature]),
    ).toEqual([
      ['dense', '', 'dense'],
      ['hybrid', 'convex', 'fused'],
      ['hybrid', 'rrf', 'fused'],
      ['hybrid', 'weighted', 'fused'],
      ['sparse', '', 'sparse'],
    ]);
    for (const table of tables) {
      expect(table.pipeline.encoder).toMatch(/^google\/universal-sentence-encoder-lite/);
      expect(table.about).toMatch(/bench\/calibrate\.ts/);
    }
  });
});

describe('calibration statistics', () => {
  it('isotonic regression pools adjacent violators into a non-decreasing fit', () => {
    const observations = [
      [1, false],
      [2, true],
      [3, false],
      [4, true],
      [5, true],
    ].map(([x, relevant]) => ({ x: x as number, relevant: relevant as boolean }));
    expect(fitIsotonic(observations)).toEqual({ x: [1, 2, 3, 4, 5], p: [0, 0.5, 0.5, 1, 1] });
  });

  it("isotonic regression keeps a block's extent: flat across it, a ramp only between blocks", () => {
    const fit = fitIsotonic([
      { x: 0, relevant: false },
      { x: 1, relevant: false },
      { x: 2, relevant: true },
      { x: 3, relevant: true },
    ]);
    expect(fit).toEqual({ x: [0, 1, 2, 3], p: [0, 0, 1, 1] });
    expect(interpolate(fit, 0.9)).toBe(0);
    expect(interpolate(fit, 1.5)).toBe(0.5);
  });

  it('isotonic regression gives equal scores one probability', () => {
    const fit = fitIsotonic([
      { x: 1, relevant: true },
      { x: 1, relevant: false },
      { x: 2, relevant: true },
    ]);
    expect(fit).toEqual({ x: [1, 2], p: [0.5, 1] });
  });

  it('interpolating an empty fit says nothing', () => {
    expect(interpolate({ x: [], p: [] }, 1)).toBeUndefined();
  });

  it.each([
    ['perfectly calibrated', [0.05, 0.05, 0.95, 0.95], [false, false, true, true], 0.05],
    ['always wrong', [0.95, 0.95], [false, false], 0.95],
    ['no predictions', [], [], 0],
  ])('expected calibration error, 10 bins: %s', (_, ps, labels, expected) => {
    const predictions = ps.map((p, i) => ({ p, relevant: labels[i]! }));
    expect(expectedCalibrationError(predictions)).toBeCloseTo(expected, 10);
  });

  it('the bootstrap interval brackets the mean, reproducibly, and is a point for constant values', () => {
    const values = Array.from({ length: 200 }, (_, i) => (i % 3) / 2);
    const interval = bootstrapMean(values);
    expect(interval.low).toBeLessThan(interval.mean);
    expect(interval.high).toBeGreaterThan(interval.mean);
    expect(bootstrapMean(values)).toEqual(interval);
    expect(bootstrapMean([0.5, 0.5, 0.5])).toEqual({ mean: 0.5, low: 0.5, high: 0.5 });
  });

  it('folds split queries, each once, deterministically', () => {
    const queries = Array.from({ length: 23 }, (_, i) => `q${i}`);
    const folds = foldsByQuery(queries, 5);
    expect(folds.flat().sort()).toEqual([...queries].sort());
    expect(folds.map((fold) => fold.length).sort()).toEqual([4, 4, 5, 5, 5]);
    expect(foldsByQuery([...queries].reverse(), 5)).toEqual(folds);
  });
});
