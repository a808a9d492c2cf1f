import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { JsonObject } from '../protocol/messages.js';
import { interpolate, type IsotonicFit } from './calibration.js';
import type { FusionMethod } from './fusion.js';
import type { Scored } from './ranking.js';
import type { Mode } from './retrieve-options.js';

/**
 * §7.7.2 `confidence`: a calibrated probability that a hit is relevant, read off a table fitted on judged queries
 * (bench/calibrate.ts). The table holds for the one pipeline it was fitted on — the encoder, the lexical scoring,
 * hybrid recall and its fusion — and for no other: a hit of any other pipeline carries no confidence.
 */

/** The pipeline a table was fitted on: what makes its fused scores mean what they meant then. */
export interface CalibratedPipeline {
  readonly encoder: string;
  readonly space: string;
  readonly bm25: { readonly k1: number; readonly b: number; readonly stem: boolean };
  readonly mode: Mode;
  readonly fusion: FusionMethod;
  readonly alpha: number;
}

export interface CalibrationTable extends IsotonicFit {
  /** How the table was produced (one line). */
  readonly about: string;
  readonly pipeline: CalibratedPipeline;
  /** The hit score the table maps: the fused score (`scores.fused`). */
  readonly feature: 'fused';
}

/** The table shipped with the server: SciFact training judgements, the default pipeline over USE-lite. */
export const SHIPPED_TABLE = fileURLToPath(
  new URL('../../models/confidence/hybrid-convex-use-lite.json', import.meta.url),
);

/** A table from JSON, checked: knots finite, x ascending, p non-decreasing in [0,1]; else an Error saying why. */
export function parseTable(text: string, source: string): CalibrationTable {
  const table = JSON.parse(text) as Partial<CalibrationTable>;
  const fail = (why: string) => new Error(`confidence table ${source}: ${why}`);
  const { x, p, pipeline } = table;
  if (table.feature !== 'fused') throw fail('feature must be "fused"');
  if (!Array.isArray(x) || !Array.isArray(p) || x.length !== p.length || x.length === 0)
    throw fail('x and p must be arrays of one length, not empty');
  if (![...x, ...p].every((v) => typeof v === 'number' && Number.isFinite(v))) throw fail('knots must be numbers');
  if (x.some((v, i) => i > 0 && v < x[i - 1]!)) throw fail('x must ascend');
  if (p.some((v, i) => v < 0 || v > 1 || (i > 0 && v < p[i - 1]!))) throw fail('p must be non-decreasing in [0,1]');
  if (
    typeof pipeline !== 'object' ||
    typeof pipeline.encoder !== 'string' ||
    typeof pipeline.space !== 'string' ||
    typeof pipeline.alpha !== 'number' ||
    typeof pipeline.bm25 !== 'object'
  )
    throw fail('pipeline must name encoder, space, bm25, mode, fusion and alpha');
  return table as CalibrationTable;
}

/** The table at `path` ('' the shipped one); undefined for `none`. */
export function loadTable(path: string): CalibrationTable | undefined {
  if (path === 'none') return undefined;
  const file = path === '' ? SHIPPED_TABLE : path;
  return parseTable(readFileSync(file, 'utf8'), file);
}

/**
 * The table when it was fitted on this server's encoder and scoring and on the pipeline a request gets by default;
 * undefined when it says nothing about what this server serves (then `retrieve.confidence` is not advertised, §6.1).
 */
export function tableFor(
  table: CalibrationTable | undefined,
  served: CalibratedPipeline,
): CalibrationTable | undefined {
  if (table === undefined) return undefined;
  const { encoder, space, bm25, mode, fusion, alpha } = table.pipeline;
  const same =
    encoder === served.encoder &&
    space === served.space &&
    bm25.k1 === served.bm25.k1 &&
    bm25.b === served.bm25.b &&
    bm25.stem === served.bm25.stem &&
    mode === served.mode &&
    fusion === served.fusion &&
    alpha === served.alpha;
  return same ? table : undefined;
}

/** What a request's pipeline was, as far as confidence cares. */
export interface RequestPipeline {
  readonly mode: Mode;
  readonly fusion: { readonly method: FusionMethod; readonly alpha: number };
  /** Whether a reranker rescored the head (its scores are not the table's). */
  readonly reranked: boolean;
  /** How many recall lists were fused (hybrid over an empty index side still fuses two). */
  readonly lists: number;
}

/** A hit's confidence, or undefined when this request's hits have none. */
export type Confidence = (hit: Pick<Scored, 'scores'>) => number | undefined;

/**
 * The confidence of this request's hits: the table's probability at each hit's fused score, when the request ran
 * the table's pipeline (hybrid, its fusion and alpha, two lists fused, no rerank); otherwise none.
 */
export function confidenceOf(table: CalibrationTable | undefined, request: RequestPipeline): Confidence | undefined {
  if (table === undefined) return undefined;
  const { pipeline } = table;
  const same =
    request.mode === pipeline.mode &&
    request.fusion.method === pipeline.fusion &&
    request.fusion.alpha === pipeline.alpha &&
    !request.reranked &&
    request.lists === 2;
  if (!same) return undefined;
  return (hit) => {
    const fused = hit.scores.fused;
    return fused === undefined ? undefined : interpolate(table, fused);
  };
}

/** The hit with its confidence, when it has one. */
export function withConfidence(body: JsonObject | undefined, confidence: number | undefined): JsonObject | undefined {
  if (body !== undefined && confidence !== undefined) body.confidence = confidence;
  return body;
}
