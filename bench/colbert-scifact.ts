/**
 * An open question: does late interaction (MaxSim over USE-lite's contextual token vectors) improve ranking?
 * Measured on BEIR SciFact with the training judgements: the dense (exact cosine) top 100 per query, reranked by
 * MaxSim, against the dense order itself (the baseline of the same run). Also a fusion of both orders (RRF).
 */
import { fileURLToPath } from 'node:url';
import { readManifest } from '../src/models/manifest.js';
import { UseLiteEncoder } from '../src/models/onnx/use-lite-encoder.js';
import { intraOpThreads } from '../src/models/models.js';
import { OnnxMaxSim } from '../src/models/onnx/maxsim.js';
import type { TokenMatrix } from '../src/models/index.js';
import { corpus, ndcg, recall, trainQueries } from './scifact.js';
import { silentLogger as silent } from '../test/helpers/logger.js';

const DIR = fileURLToPath(new URL('../models/use-lite', import.meta.url));
const DEPTH = 100;

async function inBatches<T>(texts: readonly string[], run: (batch: string[]) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < texts.length; i += 64) out.push(...(await run(texts.slice(i, i + 64))));
  return out;
}

function rrf(...rankings: (readonly string[])[]): string[] {
  const score = new Map<string, number>();
  for (const ranking of rankings)
    ranking.forEach((id, rank) => score.set(id, (score.get(id) ?? 0) + 1 / (60 + rank + 1)));
  return [...score].sort((a, b) => b[1] - a[1]).map(([id]) => id);
}

export async function benchColbert(): Promise<void> {
  const encoder = new UseLiteEncoder(
    DIR,
    readManifest(DIR),
    { intraOpThreads: intraOpThreads(0), log: silent },
    {
      maxWaitMs: 0,
      maxBatchTokens: 1 << 20,
      maxBatchItems: 64,
      maxQueuedItems: 1 << 16,
    },
  );
  const docs = corpus();
  const queries = trainQueries();
  const started = performance.now();
  const docVectors = await inBatches(
    docs.map((d) => d.text),
    (batch) => encoder.embed(batch, 'document'),
  );
  const docTokens: TokenMatrix[] = await inBatches(
    docs.map((d) => d.text),
    (b) => encoder.embedTokens(b, 'document'),
  );
  const queryVectors = await encoder.embed(
    queries.map((q) => q.text),
    'query',
  );
  const queryTokens = await encoder.embedTokens(
    queries.map((q) => q.text),
    'query',
  );
  const kernel = new OnnxMaxSim(intraOpThreads(0));
  const encoded = performance.now();

  const totals = { dense: 0, colbert: 0, fused: 0, recall: 0 };
  for (const [qi, query] of queries.entries()) {
    const qv = queryVectors[qi]!;
    const candidates = docVectors
      .map((dv, di) => ({ di, score: dv.reduce((sum, v, k) => sum + v * qv[k]!, 0) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, DEPTH);
    const dense = candidates.map((c) => docs[c.di]!.id);
    const maxSim = await kernel.maxSim(
      queryTokens[qi]!,
      candidates.map((c) => docTokens[c.di]!),
    );
    const colbert = candidates
      .map((c, i) => ({ id: docs[c.di]!.id, score: maxSim[i]! }))
      .sort((a, b) => b.score - a.score)
      .map((c) => c.id);
    totals.dense += ndcg(dense, query.relevant);
    totals.colbert += ndcg(colbert, query.relevant);
    totals.fused += ndcg(rrf(dense, colbert), query.relevant);
    totals.recall += recall(dense, query.relevant, DEPTH);
  }
  const n = queries.length;
  const base = totals.dense / n;
  console.log(
    `late interaction on SciFact (train judgements, ${n} queries, ${docs.length} docs; rerank of the dense top ${DEPTH})`,
  );
  console.log(`  dense recall@${DEPTH} (ceiling)   ${(totals.recall / n).toFixed(3)}`);
  for (const [name, total] of [
    ['dense (baseline)', totals.dense],
    ['colbert MaxSim', totals.colbert],
    ['RRF(dense, colbert)', totals.fused],
  ] as const) {
    console.log(`  ${name.padEnd(22)} nDCG@10 ${(total / n).toFixed(4)}   ratio ${(total / n / base).toFixed(3)}`);
  }
  console.log(
    `  (encoding ${((encoded - started) / 1000).toFixed(0)} s, scoring ${((performance.now() - encoded) / 1000).toFixed(0)} s)`,
  );
  await Promise.all([encoder.close(), kernel.close()]);
}
