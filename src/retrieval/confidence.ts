import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JsonObject } from '../protocol/messages.js';
import { interpolate, type IsotonicFit } from './calibration.js';
import type { FusionMethod } from './fusion.js';
import type { Scored } from './ranking.js';
import type { Mode } from './retrieve-options.js';

/**
 * §7.7.2 `confidence`: a calibrated probability that a hit is relevant, read off a table fitted on judged queries
 * (bench/calibrate.ts). A table holds for the one pipeline it was fitted on — the encoder, the lexical scoring, the
 * mode, and for hybrid recall its fusion — and for no other: the server ships one per pipeline it can calibrate
 * (models/confidence/: dense, sparse, and hybrid by convex, rrf and weighted fusion), and a hit of a pipeline with
 * none (a rerank, another alpha or rrfK, custom fusion weights) carries no confidence.
 */

/** The pipeline a table was fitted on: what makes its scores mean what they meant then. */
export interface CalibratedPipeline extends ServedScoring {
  readonly mode: Mode;
  readonly fusion: FusionMethod;
  readonly alpha: number;
  /** RRF's constant, for an rrf table (its scores are 1/(rrfK + rank) sums). */
  readonly rrfK?: number | undefined;
}

/** What makes a score of this server mean what it means: the encoder and the lexical scoring. */
export interface ServedScoring {
  readonly encoder: string;
  readonly space: string;
  readonly bm25: { readonly k1: number; readonly b: number; readonly stem: boolean };
}

/** The hit score a table maps (`scores.fused`, `scores.dense` or `scores.sparse`). */
export const FEATURES = ['fused', 'dense', 'sparse'] as const;

export interface CalibrationTable extends IsotonicFit {
  /** How the table was produced (one line). */
  readonly about: string;
  readonly pipeline: CalibratedPipeline;
  readonly feature: (typeof FEATURES)[number];
}

/** The tables shipped with the server: SciFact training judgements over USE-lite, one per pipeline. */
export const SHIPPED_TABLES = fileURLToPath(new URL('../../models/confidence/', import.meta.url));

/** A table from JSON, checked: knots finite, x ascending, p non-decreasing in [0,1]; else an Error saying why. */
export function parseTable(text: string, source: string): CalibrationTable {
  const table = JSON.parse(text) as Partial<CalibrationTable>;
  const fail = (why: string) => new Error(`confidence table ${source}: ${why}`);
  const { x, p, pipeline } = table;
  if (!(FEATURES as readonly unknown[]).includes(table.feature))
    throw fail(`feature must be one of ${FEATURES.join(', ')}`);
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

/** The tables at `path`: '' the shipped ones, `none` none, else the one table in that file. */
export function loadTables(path: string): CalibrationTable[] {
  if (path === 'none') return [];
  const files =
    path === ''
      ? readdirSync(SHIPPED_TABLES)
          .filter((name) => name.endsWith('.json'))
          .sort()
          .map((name) => join(SHIPPED_TABLES, name))
      : [path];
  return files.map((file) => parseTable(readFileSync(file, 'utf8'), file));
}

/**
 * The tables fitted on this server's encoder and scoring: the others say nothing about what it serves (and when none
 * holds for its default pipeline, `retrieve.confidence` is not advertised, §6.1).
 */
export function tablesFor(tables: readonly CalibrationTable[], served: ServedScoring): CalibrationTable[] {
  return tables.filter(({ pipeline: { encoder, space, bm25 } }) => {
    const same = encoder === served.encoder && space === served.space;
    return same && bm25.k1 === served.bm25.k1 && bm25.b === served.bm25.b && bm25.stem === served.bm25.stem;
  });
}

/** What a request's pipeline was, as far as confidence cares. */
export interface RequestPipeline {
  readonly mode: Mode;
  readonly fusion: {
    readonly method: FusionMethod;
    readonly alpha: number;
    readonly rrfK: number;
    readonly weights: Readonly<Record<string, number>>;
  };
  /** Whether a reranker rescored the head (its scores are not the table's). */
  readonly reranked: boolean;
  /** How many recall lists were fused (hybrid over an empty index side still fuses two). */
  readonly lists: number;
  /** Whether lexical recall ran on an expanded query (`rewrite: "multi-query"`): more terms, larger BM25 scores. */
  readonly expanded?: boolean | undefined;
}

/** A hit's confidence, or undefined when this request's hits have none. */
export type Confidence = (hit: Pick<Scored, 'scores'>) => number | undefined;

/** The confidence of this request's hits: the first table fitted on its pipeline, at each hit's score; else none. */
export function confidenceOf(tables: readonly CalibrationTable[], request: RequestPipeline): Confidence | undefined {
  const table = tables.find((candidate) => fitsPipeline(candidate.pipeline, request));
  if (table === undefined) return undefined;
  return (hit) => {
    const x = hit.scores[table.feature];
    return x === undefined ? undefined : interpolate(table, x);
  };
}

/**
 * Whether a request ran a table's pipeline: no rerank; the table's mode; no expanded lexical query (unless dense
 * alone); for hybrid, two lists fused by the table's
 * method, at its alpha (convex) or its rrfK (rrf), with no custom weights (which move rrf and weighted scores).
 */
function fitsPipeline(pipeline: CalibratedPipeline, request: RequestPipeline): boolean {
  if (request.reranked || request.mode !== pipeline.mode) return false;
  if (request.expanded === true && request.mode !== 'dense') return false;
  if (request.mode !== 'hybrid') return request.lists === 1;
  const { method, alpha, rrfK, weights } = request.fusion;
  if (request.lists !== 2 || method !== pipeline.fusion) return false;
  if (method === 'convex') return alpha === pipeline.alpha;
  const unweighted = Object.keys(weights).length === 0;
  return unweighted && (method !== 'rrf' || rrfK === (pipeline.rrfK ?? 60));
}

/** The hit with its confidence, when it has one. */
export function withConfidence(body: JsonObject | undefined, confidence: number | undefined): JsonObject | undefined {
  if (body !== undefined && confidence !== undefined) body.confidence = confidence;
  return body;
}
