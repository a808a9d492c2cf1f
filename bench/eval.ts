/**
 * `npm run eval [-- --scifact DIR] [--data DIR] [EVAL FLAGS...]`: retrieval quality on BEIR SciFact through the
 * server's own commands. `rcp-server ingest` puts SciFact's corpus into the data dir (default indexes/scifact;
 * resumable, so a second run only checks what is stored), then `rcp-server eval` runs its training judgements
 * through `retrieve` and prints nDCG@10, Recall@100 and MRR@10; every other flag goes to eval (`--mode sparse`,
 * `--fusion convex`, `--rerank colbert`, `--report FILE`, ...). SciFact comes from `--scifact DIR` or RCP_SCIFACT,
 * else ../shared/data/scifact. With `--report FILE` the run is also printed as a Markdown table row (the README's
 * quality table): nDCG@10 with its 95% bootstrap interval over queries, Recall@100, MRR@10 and, when hits carry
 * `confidence`, its calibration error (in-sample on the training judgements it was fitted on). `--baseline FILE` (another
 * run's report) adds Δ: the paired bootstrap of the per-query nDCG@10 differences from that run (2,000 resamples,
 * 95%), the noise a change must beat.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EvalReport } from '../src/eval.js';
import { bootstrapMean } from '../src/retrieval/calibration.js';
import { scifactPath } from './scifact.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The value of `flag` in `args`, removed from them with it. */
function take(args: string[], flag: string): string | undefined {
  const at = args.indexOf(flag);
  return at < 0 ? undefined : args.splice(at, 2)[1];
}

const args = process.argv.slice(2);
take(args, '--scifact');
const baseline = take(args, '--baseline');
const reportAt = args.indexOf('--report');
const report = reportAt < 0 ? undefined : args[reportAt + 1];
const data = resolve(take(args, '--data') ?? resolve(ROOT, 'indexes/scifact'));

function server(...argv: string[]): void {
  const { status } = spawnSync(process.execPath, [resolve(ROOT, 'bin/rcp-server.js'), ...argv], { stdio: 'inherit' });
  if (status !== 0) process.exit(status ?? 1);
}

server('ingest', '--data', data, scifactPath('corpus.jsonl'));
server(
  'eval',
  '--data',
  data,
  '--queries',
  scifactPath('queries.jsonl'),
  '--qrels',
  scifactPath('qrels/train.tsv'),
  ...args,
);

const signed = (x: number) => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(4)}`;

/** Δ nDCG@10 from the baseline run, paired by query, with its 95% bootstrap interval. */
function delta(run: EvalReport, base: EvalReport): string {
  const differences = Object.entries(run.perQuery).map(([query, value]) => value - (base.perQuery[query] ?? 0));
  const { mean, low, high } = bootstrapMean(differences);
  return `${signed(mean)} [${signed(low)}, ${signed(high)}]`;
}

if (report !== undefined) {
  const run = JSON.parse(readFileSync(report, 'utf8')) as EvalReport;
  const base = baseline === undefined ? undefined : (JSON.parse(readFileSync(baseline, 'utf8')) as EvalReport);
  const { mean, low, high } = run.ndcg10Ci;
  const asked = Object.fromEntries(
    Object.entries(run.params).filter(([key]) => !['k', 'unit', 'includeText'].includes(key)),
  );
  const ece = run.confidence === undefined ? '—' : run.confidence.ece10.toFixed(3);
  console.log(
    `| run | nDCG@10 [95% CI] |${base ? ' Δ vs baseline [95% CI] |' : ''} Recall@100 | MRR@10 | confidence ECE top-10 |`,
  );
  console.log(`| --- | --- |${base ? ' --- |' : ''} --- | --- | --- |`);
  console.log(
    `| \`${JSON.stringify(asked)}\` | ${mean.toFixed(4)} [${low.toFixed(4)}, ${high.toFixed(4)}] | ` +
      `${base ? `${delta(run, base)} | ` : ''}${run.recall100.toFixed(4)} | ${run.mrr10.toFixed(4)} | ${ece} |`,
  );
}
