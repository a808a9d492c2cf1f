/**
 * The default encoder's graph alone: docs/s embedding SciFact abstracts in ingest-sized batches (64, truncated to 128
 * tokens as the encoder does), for several model files and session settings measured interleaved in one run, so the
 * ratios hold on a noisy shared machine. Tokenising and packing happen before the clock starts.
 *
 *   node --import tsx bench/encoder-graph.ts [VARIANT...]
 *
 * A VARIANT is `FILE[,opt=value...]` with options `level` (disabled|basic|extended|all), `intra`, `inter`, `mode`
 * (sequential|parallel), `spin` (0|1: intra-op threads spin while waiting), `profile` (a file prefix: writes onnxruntime's per-op profile); default: the built
 * models/use-lite/model.onnx at level all. The first variant is the baseline. RCP_BENCH_DOCS (default 512) and
 * RCP_BENCH_ROUNDS (default 5) size the run. A model with an `indices` input is fed the sparse batch, else `ids`
 * [batch, time] padded with 0 and `lengths` [batch].
 */
import { readFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import { denseFeeds, sparseFeeds } from '../src/models/onnx/use-lite-feeds.js';
import { SentencePieceTokenizer, type Vocabulary } from '../src/models/tokenizers/sentencepiece.js';
import { corpus } from './scifact.js';

const MODEL_DIR = new URL('../models/use-lite/', import.meta.url);
const BATCH = 64;
const MAX_TOKENS = 128;

interface Variant {
  readonly label: string;
  readonly session: ort.InferenceSession;
  readonly feeds: { readonly feed: Record<string, ort.Tensor>; readonly docs: number }[];
}

async function open(spec: string, batches: readonly number[][][]): Promise<Variant> {
  const [file = '', ...options] = spec.split(',');
  const settings = Object.fromEntries(options.map((option) => option.split('=') as [string, string]));
  const session = await ort.InferenceSession.create(file, {
    graphOptimizationLevel: (settings.level ?? 'all') as 'all',
    ...(settings.intra === undefined ? {} : { intraOpNumThreads: Number(settings.intra) }),
    ...(settings.inter === undefined ? {} : { interOpNumThreads: Number(settings.inter) }),
    ...(settings.mode === undefined ? {} : { executionMode: settings.mode as 'sequential' }),
    ...(settings.profile === undefined ? {} : { enableProfiling: true, profileFilePrefix: settings.profile }),
    ...(settings.spin === undefined ? {} : { extra: { session: { intra_op: { allow_spinning: settings.spin } } } }),
  });
  const sparse = session.inputNames.includes('indices');
  const feeds = batches.map((rows) => ({ feed: sparse ? sparseFeeds(rows) : denseFeeds(rows), docs: rows.length }));
  await session.run(feeds[0]!.feed, ['embeddings']); // warm-up
  return { label: spec, session, feeds };
}

/** One batch on one variant: seconds. */
async function time(variant: Variant, batch: number): Promise<number> {
  const started = performance.now();
  await variant.session.run(variant.feeds[batch]!.feed, ['embeddings']);
  return (performance.now() - started) / 1000;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

export async function benchEncoderGraph(specs: readonly string[]): Promise<void> {
  const count = Number(process.env.RCP_BENCH_DOCS ?? 512);
  const rounds = Number(process.env.RCP_BENCH_ROUNDS ?? 5);
  const vocabulary = JSON.parse(readFileSync(new URL('vocab.json', MODEL_DIR), 'utf8')) as Vocabulary;
  const tokenizer = new SentencePieceTokenizer(vocabulary, { reserved: 6, unknownId: 0 });
  const docs = corpus()
    .slice(0, count - (count % BATCH))
    .map((doc) => tokenizer.encode(doc.text).slice(0, MAX_TOKENS));
  const batches: number[][][] = [];
  for (let i = 0; i < docs.length; i += BATCH) batches.push(docs.slice(i, i + BATCH));
  const tokens = docs.reduce((sum, row) => sum + row.length, 0);
  const variants: Variant[] = [];
  for (const spec of specs) variants.push(await open(spec, batches));
  // Interleaved batch by batch, the order rotating, so load that comes and goes on a shared machine falls on every
  // variant alike; each round's rate is its docs over its summed batch times.
  const seconds = variants.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    const spent = variants.map(() => 0);
    for (let batch = 0; batch < batches.length; batch++) {
      for (let j = 0; j < variants.length; j++) {
        const k = (batch + round + j) % variants.length;
        spent[k]! += await time(variants[k]!, batch);
      }
    }
    spent.forEach((value, k) => seconds[k]!.push(value));
  }
  const rates = seconds.map((values) => values.map((value) => docs.length / value));
  const base = median(rates[0]!);
  console.log(
    `encoder graph alone: ${docs.length} SciFact abstracts (${(tokens / docs.length).toFixed(1)} tokens each), ` +
      `batches of ${BATCH}, median of ${rounds} rounds interleaved batch by batch`,
  );
  for (const [k, variant] of variants.entries()) {
    const value = median(rates[k]!);
    console.log(`  ${value.toFixed(1).padStart(7)} docs/s  ratio ${(value / base).toFixed(3)}  ${variant.label}`);
  }
  for (const variant of variants) {
    // Writes the profile file of a variant opened with `profile=PREFIX` (in the working directory's terms).
    variant.session.endProfiling();
    await variant.session.release();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const specs = process.argv.slice(2);
  await benchEncoderGraph(specs.length > 0 ? specs : [new URL('model.onnx', MODEL_DIR).pathname]);
}
