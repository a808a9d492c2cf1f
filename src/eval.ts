import { createReadStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { App } from './app.js';
import { Requester, SessionChannel } from './client/requester.js';
import { RpcError } from './protocol/errors.js';
import type { JsonObject } from './protocol/messages.js';
import type { Hit } from './protocol/schemas/hit.js';
import type { ResultOf } from './protocol/schemas/results.js';
import { bootstrapMean, expectedCalibrationError, type Interval } from './retrieval/calibration.js';
import { mrr, ndcg, recall } from './retrieval/relevance-metrics.js';
import { StartupError } from './startup-error.js';

/** A retrieve the eval could not run (bad params for this server): reported as text, exit 1. */
export class EvalError extends StartupError {
  override name = 'EvalError';
  override readonly exitCode = 1;
}

export interface EvalReport {
  readonly queries: number;
  readonly params: JsonObject;
  readonly ndcg10: number;
  /** nDCG@10's 95% percentile bootstrap interval over queries (2,000 resamples, seed 1): the noise of the mean. */
  readonly ndcg10Ci: Interval;
  readonly recall100: number;
  readonly mrr10: number;
  readonly latencyMsP50: number;
  /**
   * §7.7.2 `confidence`, when the hits carried it: expected calibration error (10 bins) against the judgements over
   * the top 10 and over every returned hit. In-sample when these are the judgements the table was fitted on.
   */
  readonly confidence?: {
    readonly hits10: number;
    readonly ece10: number;
    readonly hitsAll: number;
    readonly eceAll: number;
  };
  /** Per query id, its nDCG@10: what a paired comparison of two runs resamples. */
  readonly perQuery: Readonly<Record<string, number>>;
}

/** One judged query's answer: its documents in rank order, the hits, and what is relevant. */
export interface JudgedAnswer {
  readonly query: string;
  readonly ranked: readonly string[];
  readonly hits: readonly Hit[];
  readonly relevant: ReadonlySet<string>;
}

async function lines(path: string): Promise<string[]> {
  const out: string[] = [];
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity }))
    if (line.trim() !== '') out.push(line);
  return out;
}

/**
 * Runs every judged query through `retrieve` on an in-process session (the full method: params validation, the
 * pipeline, result shaping), calling `visit` with each answer. Queries are BEIR JSON Lines (`{"_id", "text"}`),
 * judgements BEIR TSV (`query-id corpus-id score`, header line); a hit's document is its `chunk.docId`.
 */
export async function runJudged(
  app: App,
  queriesPath: string,
  qrelsPath: string,
  request: JsonObject,
  visit: (answer: JudgedAnswer, latencyMs: number) => void,
): Promise<void> {
  const texts = new Map(
    (await lines(queriesPath)).map((line) => {
      const query = JSON.parse(line) as { _id: string | number; text: string };
      return [String(query._id), query.text] as const;
    }),
  );
  const judgements = new Map<string, Set<string>>();
  for (const line of (await lines(qrelsPath)).slice(1)) {
    const [query, doc, score] = line.split('\t');
    if (query === undefined || doc === undefined || !(Number(score) > 0)) continue;
    judgements.set(query, (judgements.get(query) ?? new Set()).add(doc));
  }
  const rcp = new Requester(new SessionChannel(app.createSession()));
  await called(
    'initialize',
    rcp.call('initialize', { protocolVersion: 1, client: { name: 'eval', version: '1' }, capabilities: {} }),
  );
  for (const [query, relevant] of judgements) {
    const text = texts.get(query);
    if (text === undefined) continue;
    const started = performance.now();
    const result = await called('retrieve', rcp.call('retrieve', { ...request, query: text }));
    const latency = performance.now() - started;
    const { hits } = result as ResultOf<'retrieve'>;
    visit({ query, ranked: hits.map((hit) => hit.chunk?.docId ?? String(hit.id)), hits, relevant }, latency);
  }
}

/** A call's result; its error answer as an EvalError naming the method. */
async function called(method: string, call: Promise<JsonObject>): Promise<JsonObject> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof RpcError) throw new EvalError(`${method} failed: ${JSON.stringify(error)}`);
    throw error;
  }
}

/**
 * `rcp-server eval`: nDCG@10 (with its bootstrap interval over queries), Recall@100 and MRR@10 over documents, and,
 * when hits carry `confidence`, its calibration error against the judgements.
 */
export async function evaluate(
  app: App,
  queriesPath: string,
  qrelsPath: string,
  params: JsonObject,
): Promise<EvalReport> {
  const request = { k: 100, unit: 'document', includeText: false, ...params };
  const perQuery: Record<string, number> = {};
  const totals = { recall: 0, mrr: 0 };
  const latencies: number[] = [];
  const calibrated: { p: number; relevant: boolean; rank: number }[] = [];
  await runJudged(app, queriesPath, qrelsPath, request, ({ query, ranked, hits, relevant }, latency) => {
    latencies.push(latency);
    perQuery[query] = ndcg(ranked, relevant, 10);
    totals.recall += recall(ranked, relevant, 100);
    totals.mrr += mrr(ranked, relevant, 10);
    hits.forEach((hit, rank) => {
      if (hit.confidence !== undefined)
        calibrated.push({ p: hit.confidence, relevant: relevant.has(ranked[rank] ?? ''), rank });
    });
  });
  const n = latencies.length;
  latencies.sort((a, b) => a - b);
  const ndcgs = Object.values(perQuery);
  const ci = bootstrapMean(ndcgs);
  const top10 = calibrated.filter((hit) => hit.rank < 10);
  return {
    queries: n,
    params: request,
    ndcg10: ci.mean,
    ndcg10Ci: ci,
    recall100: totals.recall / n,
    mrr10: totals.mrr / n,
    latencyMsP50: latencies[Math.floor(n / 2)] ?? 0,
    ...(calibrated.length === 0
      ? {}
      : {
          confidence: {
            hits10: top10.length,
            ece10: expectedCalibrationError(top10),
            hitsAll: calibrated.length,
            eceAll: expectedCalibrationError(calibrated),
          },
        }),
    perQuery,
  };
}

export async function writeReport(path: string, report: EvalReport): Promise<void> {
  await writeFile(path, `${JSON.stringify(report, null, 2)}\n`);
}
