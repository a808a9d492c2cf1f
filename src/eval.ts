import { createReadStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { App } from './app.js';
import type { JsonObject } from './protocol/messages.js';
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
  readonly recall100: number;
  readonly mrr10: number;
  readonly latencyMsP50: number;
}

async function lines(path: string): Promise<string[]> {
  const out: string[] = [];
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity }))
    if (line.trim() !== '') out.push(line);
  return out;
}

/**
 * `rcp-server eval`: runs every judged query through `retrieve` on an in-process session (the full method: params
 * validation, the pipeline, result shaping) and reports nDCG@10, Recall@100 and MRR@10 over documents. Queries are
 * BEIR JSON Lines (`{"_id", "text"}`), judgements BEIR TSV (`query-id corpus-id score`, header line).
 */
export async function evaluate(
  app: App,
  queriesPath: string,
  qrelsPath: string,
  params: JsonObject,
): Promise<EvalReport> {
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
  const session = app.createSession();
  await session.handle({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: 1, client: { name: 'eval', version: '1' }, capabilities: {} },
  });
  const request = { k: 100, unit: 'document', includeText: false, ...params };
  let id = 0;
  const totals = { ndcg: 0, recall: 0, mrr: 0 };
  const latencies: number[] = [];
  for (const [query, relevant] of judgements) {
    const text = texts.get(query);
    if (text === undefined) continue;
    const started = performance.now();
    const reply = (await session.handle({
      jsonrpc: '2.0',
      id: ++id,
      method: 'retrieve',
      params: { ...request, query: text },
    })) as {
      result?: { hits: { id: string; chunk?: { docId: string } }[] };
      error?: unknown;
    };
    latencies.push(performance.now() - started);
    if (reply.result === undefined) throw new EvalError(`retrieve failed: ${JSON.stringify(reply.error)}`);
    const ranked = reply.result.hits.map((hit) => hit.chunk?.docId ?? String(hit.id));
    totals.ndcg += ndcg(ranked, relevant, 10);
    totals.recall += recall(ranked, relevant, 100);
    totals.mrr += mrr(ranked, relevant, 10);
  }
  const n = latencies.length;
  latencies.sort((a, b) => a - b);
  return {
    queries: n,
    params: request,
    ndcg10: totals.ndcg / n,
    recall100: totals.recall / n,
    mrr10: totals.mrr / n,
    latencyMsP50: latencies[Math.floor(n / 2)] ?? 0,
  };
}

export async function writeReport(path: string, report: EvalReport): Promise<void> {
  await writeFile(path, `${JSON.stringify(report, null, 2)}\n`);
}
