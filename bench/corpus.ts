/**
 * Corpus start-up and ingest, as ratios to baselines measured in the same run:
 *
 * 1. Restart of a 100k-chunk corpus: time to ready when the saved dense index is loaded (plus the lexical rebuild)
 *    versus a full rebuild of the dense index from the stored vectors (the saved file deleted). Vectors are random
 *    unit vectors of the default encoder's dimension and texts are SciFact sentences: embedding 100k chunks for real
 *    would take the bench past ten minutes and does not change what is measured here.
 * 2. Ingest throughput with the default encoder (SciFact abstracts through `ingest`, the index/add path) versus
 *    the encoder alone embedding the same texts.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Corpus, contentHash } from '../src/corpus/corpus.js';
import type { UseLiteEncoder } from '../src/models/onnx/use-lite-encoder.js';
import { ingest } from '../src/ingest/ingest.js';
import { benchCorpusSettings, benchEncoder } from './settings.js';
import { corpus as scifact } from './scifact.js';
import { silentLogger as silent } from '../test/helpers/logger.js';

const CHUNKS = Number(process.env.RCP_BENCH_CHUNKS ?? 100_000);
const INGEST_DOCS = 1000;

const settings = benchCorpusSettings;

/** A random unit vector of `dimension`, the same for the same seed (a stand-in for an embedding). */
export function randomUnit(dimension: number, seed: number): Float32Array {
  let state = seed >>> 0 || 1;
  const vector = new Float32Array(dimension);
  let norm = 0;
  for (let k = 0; k < dimension; k++) {
    state = (state * 1664525 + 1013904223) >>> 0;
    vector[k] = state / 2 ** 32 - 0.5;
    norm += vector[k]! ** 2;
  }
  for (let k = 0; k < dimension; k++) vector[k]! /= Math.sqrt(norm);
  return vector;
}

async function timeToReady(dir: string, encoder: UseLiteEncoder): Promise<{ ms: number; corpus: Corpus }> {
  const started = performance.now();
  const corpus = new Corpus(settings(dir), encoder, silent);
  await corpus.ready;
  return { ms: performance.now() - started, corpus };
}

/** The text of synthetic chunk `n`: two SciFact sentences (about 60 words). */
export function syntheticTexts(): (n: number) => string {
  const sentences = scifact()
    .flatMap((doc) => doc.text.split(/(?<=\.)\s+/))
    .filter((s) => s.length > 40);
  return (n) => `${sentences[n % sentences.length]!} ${sentences[(n * 7) % sentences.length]!}`;
}

/**
 * A data dir holding `chunks` synthetic one-chunk documents (SciFact sentences, random unit vectors), written to the
 * store directly (the write path minus embedding), 1000 per transaction; no saved dense index.
 */
export async function syntheticDir(encoder: UseLiteEncoder, chunks: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'rcp-bench-corpus-'));
  const textOf = syntheticTexts();
  const seed = new Corpus(settings(dir), encoder, silent);
  await seed.ready;
  const filling = performance.now();
  for (let start = 0; start < chunks; start += 1000) {
    const documents = Array.from({ length: Math.min(1000, chunks - start) }, (_, i) => {
      const n = start + i;
      const text = textOf(n);
      return {
        id: `doc-${n}`,
        text,
        meta: {},
        hash: contentHash(text, {}, { chunk: false, contextual: false }),
        origin: 'operator' as const,
        chunks: [{ text, context: '', start: 0, end: text.length, vector: randomUnit(encoder.info.dimension, n + 1) }],
      };
    });
    await seed.store.upsert(documents);
  }
  console.log(`  (filled ${chunks} chunks into the store in ${((performance.now() - filling) / 1000).toFixed(1)} s)`);
  await seed.close();
  // The seed applied nothing to its dense index, so whatever it saved is not the corpus: remove it.
  for (const name of readdirSync(dir)) if (/\.(?:hnsw|sum|bm25)$/.test(name)) rmSync(join(dir, name));
  return dir;
}

async function restart(encoder: UseLiteEncoder): Promise<void> {
  const dir = await syntheticDir(encoder, CHUNKS);
  const rebuild = await timeToReady(dir, encoder);
  const stats = await rebuild.corpus.stats();
  await rebuild.corpus.close(); // saves dense-<seq>.hnsw
  const load = await timeToReady(dir, encoder);
  await load.corpus.close();
  const file = readdirSync(dir).find((name) => name.endsWith('.hnsw'));
  console.log(
    `restart with ${stats.chunks} chunks (${encoder.info.dimension}-d, M 16, efConstruction 200; ratio to a full rebuild, same run)`,
  );
  console.log(`  full rebuild from stored vectors  ${(rebuild.ms / 1000).toFixed(1).padStart(7)} s   ratio 1.000`);
  console.log(
    `  load saved index + replay         ${(load.ms / 1000).toFixed(1).padStart(7)} s   ratio ${(load.ms / rebuild.ms).toFixed(3)}   (${file})`,
  );
  rmSync(dir, { recursive: true, force: true });
}

async function ingestRate(encoder: UseLiteEncoder): Promise<void> {
  const docs = scifact().slice(0, INGEST_DOCS);
  const texts = docs.map((doc) => doc.text);
  const embedding = performance.now();
  for (let i = 0; i < texts.length; i += 64) await encoder.embed(texts.slice(i, i + 64), 'document');
  const embedRate = texts.length / ((performance.now() - embedding) / 1000);

  const work = mkdtempSync(join(tmpdir(), 'rcp-bench-ingest-'));
  const source = join(work, 'corpus.jsonl');
  writeFileSync(source, docs.map((doc) => JSON.stringify({ _id: doc.id, text: doc.text })).join('\n'));
  const corpus = new Corpus(settings(join(work, 'data')), encoder, silent);
  await corpus.ready;
  const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
  const summary = await ingest(corpus, [source], { chunk: false, contextual: false, batchSize: 64 }, quiet);
  await corpus.close();
  const rate = summary.added / summary.seconds;
  console.log(`ingest, ${INGEST_DOCS} SciFact abstracts with the default encoder (ratio to embedding alone, same run)`);
  console.log(`  encoder alone                     ${embedRate.toFixed(1).padStart(7)} docs/s ratio 1.000`);
  console.log(
    `  rcp-server ingest (index/add path) ${rate.toFixed(1).padStart(6)} docs/s ratio ${(rate / embedRate).toFixed(3)}`,
  );
  rmSync(work, { recursive: true, force: true });
}

export async function benchCorpus(): Promise<void> {
  const encoder = await benchEncoder();
  await ingestRate(encoder);
  await restart(encoder);
  await encoder.close();
}
