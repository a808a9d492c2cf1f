/**
 * Retrieval quality of USE-lite model files on SciFact train (5,183 abstracts, the judged training queries): exact
 * dense retrieval by cosine, nDCG@10 and recall@100 per model, and each model's per-query nDCG@10 difference from the
 * first (the baseline) with its paired standard error, so "within noise" has a number: |Δ| < 2 SE.
 *
 *   node --import tsx bench/encoder-quality.ts BASELINE.onnx OTHER.onnx...
 *
 * Model files take the dense input of use-lite-graph.ts (`ids`, `lengths`); texts are truncated to 128 tokens as the
 * encoder does.
 */
import { readFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import { denseFeeds } from '../src/models/onnx/use-lite-feeds.js';
import { SentencePieceTokenizer, type Vocabulary } from '../src/models/tokenizers/sentencepiece.js';
import { corpus, ndcg, recall, trainQueries } from './scifact.js';

const MODEL_DIR = new URL('../models/use-lite/', import.meta.url);
const BATCH = 64;
const DIMENSION = 512;

async function embedAll(session: ort.InferenceSession, rows: readonly number[][]): Promise<Float32Array> {
  const out = new Float32Array(rows.length * DIMENSION);
  for (let start = 0; start < rows.length; start += BATCH) {
    const batch = rows.slice(start, start + BATCH);
    const result = await session.run(denseFeeds(batch), ['embeddings']);
    out.set(result.embeddings!.data as Float32Array, start * DIMENSION);
  }
  return out;
}

function ranked(query: Float32Array, docs: Float32Array, ids: readonly string[], k: number): string[] {
  const scores = new Float32Array(ids.length);
  for (let d = 0; d < ids.length; d++) {
    let dot = 0;
    for (let j = 0; j < DIMENSION; j++) dot += query[j]! * docs[d * DIMENSION + j]!;
    scores[d] = dot;
  }
  return [...scores.keys()]
    .sort((a, b) => scores[b]! - scores[a]!)
    .slice(0, k)
    .map((d) => ids[d]!);
}

export async function benchEncoderQuality(files: readonly string[]): Promise<void> {
  const vocabulary = JSON.parse(readFileSync(new URL('vocab.json', MODEL_DIR), 'utf8')) as Vocabulary;
  const tokenizer = new SentencePieceTokenizer(vocabulary, { reserved: 6, unknownId: 0 });
  const docs = corpus();
  const queries = trainQueries();
  const docRows = docs.map((doc) => tokenizer.encode(doc.text).slice(0, 128));
  const queryRows = queries.map((query) => tokenizer.encode(query.text).slice(0, 128));
  const perQuery: number[][] = [];
  console.log(`SciFact train: ${docs.length} docs, ${queries.length} judged queries, exact cosine retrieval`);
  for (const file of files) {
    const session = await ort.InferenceSession.create(file, { graphOptimizationLevel: 'all' });
    const docVectors = await embedAll(session, docRows);
    const queryVectors = await embedAll(session, queryRows);
    await session.release();
    const scores: number[] = [];
    let recalled = 0;
    queries.forEach((query, q) => {
      const top = ranked(
        queryVectors.subarray(q * DIMENSION, (q + 1) * DIMENSION),
        docVectors,
        docs.map((d) => d.id),
        100,
      );
      scores.push(ndcg(top, query.relevant, 10));
      recalled += recall(top, query.relevant, 100);
    });
    perQuery.push(scores);
    const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
    let line = `  nDCG@10 ${mean.toFixed(4)}  recall@100 ${(recalled / queries.length).toFixed(4)}`;
    const base = perQuery[0]!;
    if (perQuery.length > 1) {
      const diffs = scores.map((s, q) => s - base[q]!);
      const delta = diffs.reduce((a, b) => a + b, 0) / diffs.length;
      const variance = diffs.reduce((a, d) => a + (d - delta) ** 2, 0) / (diffs.length - 1);
      const se = Math.sqrt(variance / diffs.length);
      line += `  Δ ${delta >= 0 ? '+' : ''}${delta.toFixed(4)} (paired SE ${se.toFixed(4)}; ${Math.abs(delta) < 2 * se ? 'within noise' : 'beyond noise'})`;
    }
    console.log(`${line}  ${file}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchEncoderQuality(process.argv.slice(2));
}
