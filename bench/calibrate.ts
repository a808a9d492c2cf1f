/**
 * `node --import tsx bench/calibrate.ts [--scifact DIR] [--data DIR] [--folds 5] [--mode M] [--fusion F] [--out FILE]`:
 * fits a §7.7.2 `confidence` table the server ships (models/confidence/: one per pipeline, by default the default
 * pipeline's, hybrid-convex-use-lite.json; `--mode dense`, `--mode sparse`, `--mode hybrid --fusion rrf|weighted` the others').
 *
 * SciFact's training queries run through `retrieve` with the server's defaults (k 100, chunks) but the mode and
 * fusion asked, on a data dir that already holds SciFact's corpus (`rcp-server ingest --data DIR
 * ../shared/data/scifact/corpus.jsonl`); each returned hit's score of that pipeline (the fused score, or the dense
 * or sparse one) is paired with its judgement (relevant when its document is in qrels/train.tsv). An isotonic fit
 * (pool adjacent violators) of relevance on the fused score is cross-validated by query (k folds): the expected
 * calibration error (10 bins) on each held-out fold, over its top-10 hits and over all its hits, is printed and kept
 * in the table; the table itself is the fit on every training query. SciFact comes from `--scifact DIR` or
 * RCP_SCIFACT, else ../shared/data/scifact; nothing of it is written but the fitted knots.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openQuietApp } from '../src/cli/startup.js';
import { runJudged } from '../src/eval.js';
import {
  expectedCalibrationError,
  fitIsotonic,
  foldsByQuery,
  interpolate,
  type Observation,
} from '../src/retrieval/calibration.js';
import { SHIPPED_TABLES, type CalibrationTable } from '../src/retrieval/confidence.js';
import type { FusionMethod } from '../src/retrieval/fusion.js';
import type { Mode } from '../src/retrieval/retrieve-options.js';
import { scifactPath } from './scifact.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function take(args: string[], flag: string): string | undefined {
  const at = args.indexOf(flag);
  return at < 0 ? undefined : args.splice(at, 2)[1];
}

interface Judged extends Observation {
  readonly query: string;
  readonly rank: number;
}

const args = process.argv.slice(2);
const data = resolve(take(args, '--data') ?? resolve(ROOT, 'indexes/scifact'));
const folds = Number(take(args, '--folds') ?? 5);
const mode = (take(args, '--mode') ?? 'hybrid') as Mode;
const fusionAsked = take(args, '--fusion') as FusionMethod | undefined;
const feature: CalibrationTable['feature'] = mode === 'hybrid' ? 'fused' : mode;
const named = mode === 'hybrid' ? `hybrid-${fusionAsked ?? 'convex'}` : mode;
const out = resolve(take(args, '--out') ?? resolve(SHIPPED_TABLES, `${named}-use-lite.json`));
const queries = scifactPath('queries.jsonl');
const qrels = scifactPath('qrels/train.tsv');

const { config, app } = await openQuietApp(undefined, { dataDir: data });
const observations: Judged[] = [];
let encoder = '';
try {
  await app.corpus?.ready;
  encoder = app.models.encoder?.info.identity ?? '';
  // The defaults a client gets (no rerank) in the mode and fusion asked, k at the default candidateK.
  const fusion = fusionAsked === undefined ? {} : { fusion: { method: fusionAsked } };
  const request = { k: config.retrieve.candidateK, includeText: false, rerank: false, mode, ...fusion };
  await runJudged(app, queries, qrels, request, ({ query, ranked, hits, relevant }) => {
    hits.forEach((hit, rank) => {
      const x = hit.scores?.[feature];
      if (x !== undefined) observations.push({ query, rank, x, relevant: relevant.has(ranked[rank]!) });
    });
  });
} finally {
  await app.close();
}

const queryIds = [...new Set(observations.map((o) => o.query))];
const perFold: { ece10: number; eceAll: number; hits10: number; hitsAll: number }[] = [];
for (const [i, held] of foldsByQuery(queryIds, folds).entries()) {
  const heldOut = new Set(held);
  const fit = fitIsotonic(observations.filter((o) => !heldOut.has(o.query)));
  const predicted = observations
    .filter((o) => heldOut.has(o.query))
    .map((o) => ({ p: interpolate(fit, o.x) ?? 0, relevant: o.relevant, rank: o.rank }));
  const top10 = predicted.filter((o) => o.rank < 10);
  const fold = {
    ece10: expectedCalibrationError(top10),
    eceAll: expectedCalibrationError(predicted),
    hits10: top10.length,
    hitsAll: predicted.length,
  };
  perFold.push(fold);
  console.log(
    `fold ${i + 1}: ${held.length} queries  ECE top-10 ${fold.ece10.toFixed(4)} (${fold.hits10} hits)  ` +
      `ECE all ${fold.eceAll.toFixed(4)} (${fold.hitsAll} hits)  knots ${fit.x.length}`,
  );
}
const mean = (key: 'ece10' | 'eceAll') => perFold.reduce((total, fold) => total + fold[key], 0) / perFold.length;
console.log(`mean: ECE top-10 ${mean('ece10').toFixed(4)}  ECE all ${mean('eceAll').toFixed(4)}`);

const fit = fitIsotonic(observations);
const round = (v: number) => Math.round(v * 1e6) / 1e6;
const { bm25, space } = config.index;
const { alpha, method } = config.retrieve.fusion;
const table: CalibrationTable & { heldOut: unknown } = {
  about:
    `Isotonic fit of P(relevant) on the ${feature} score, SciFact train (${queryIds.length} queries, ` +
    `${observations.length} hits, top ${config.retrieve.candidateK}); made by bench/calibrate.ts.`,
  pipeline: {
    encoder,
    space,
    bm25: { k1: bm25.k1, b: bm25.b, stem: bm25.stem },
    mode,
    fusion: fusionAsked ?? method,
    alpha,
    ...((fusionAsked ?? method) === 'rrf' ? { rrfK: config.retrieve.fusion.rrfK } : {}),
  },
  feature,
  heldOut: {
    folds,
    ece10Top10: perFold.map((fold) => round(fold.ece10)),
    ece10All: perFold.map((fold) => round(fold.eceAll)),
    meanTop10: round(mean('ece10')),
    meanAll: round(mean('eceAll')),
  },
  x: fit.x.map(round),
  p: fit.p.map(round),
};
writeFileSync(out, `${JSON.stringify(table)}\n`);
console.log(`wrote ${out}: ${fit.x.length} knots`);
