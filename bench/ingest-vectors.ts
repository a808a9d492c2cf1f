/**
 * Import rate of JSON Lines whose records carry their own vector (docs/corpus.md, "Vectors embedded elsewhere"):
 * chunks/s end to end through `ingest` (parsing, validation, the store's durable transactions, the HNSW graph, BM25),
 * at each count of random unit vectors of the encoder's dimension with SciFact-like texts, and in the same run the
 * same texts ingested through the encoder at a smaller count. Each run's time is split where it went, measured in
 * the run itself: the store's write (its writer thread, fsync included), the HNSW insert (its worker), BM25 (the
 * event loop), the rest of the write (validation, hashing, unit length) and, outside the writes, reading and parsing
 * the lines. One process, one core per stage: the stages of one batch run one after another.
 *
 *   npm run bench -- ingest-vectors [--scifact DIR]
 *
 * RCP_BENCH_VECTORS (default 20000,100000): the import counts; RCP_BENCH_ENCODED (default 1000): the encoder's;
 * RCP_BENCH_BATCH (default 64, as ingest): documents per transaction; RCP_BENCH_EF_CONSTRUCTION (default 200,100;
 * empty for none): the HNSW insert alone at the first count, at each of these efConstruction values.
 * Texts are generated (about SciFact's length, ~1,400 characters) unless `--scifact DIR` names SciFact, whose
 * abstracts are then cycled. A last line times `rcp-server ingest` as a process at the first count (model load and
 * start-up included).
 */
import { spawnSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Corpus } from '../src/corpus/corpus.js';
import { DenseIndex } from '../src/corpus/hnsw/dense-index.js';
import { DerivedIndexes } from '../src/corpus/indexes.js';
import { Bm25Index } from '../src/lexical/bm25.js';
import { CorpusStore } from '../src/corpus/store/corpus-store.js';
import { ingest } from '../src/ingest/ingest.js';
import { seededRandom } from '../test/helpers/children.js';
import { corpus as scifact } from './scifact.js';
import { benchCorpusSettings, benchEncoder } from './settings.js';

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
/** Documents per transaction: `rcp-server ingest`'s unless RCP_BENCH_BATCH says. */
const BATCH = Number(process.env.RCP_BENCH_BATCH ?? 64);

/** SciFact-like abstracts: sentences of pseudo-words over a 5,000-word vocabulary, Zipf-ish, ~1,400 characters. */
function generatedTexts(next: () => number): (i: number) => string {
  const syllables = ['pro', 'tein', 'cell', 'gen', 'ase', 'mi', 'to', 'chon', 'dri', 'al', 'neu', 'ron', 'im', 'mu'];
  const vocabulary = Array.from({ length: 5000 }, () =>
    Array.from({ length: 2 + Math.floor(next() * 3) }, () => syllables[Math.floor(next() * syllables.length)]).join(''),
  );
  const word = () => vocabulary[Math.floor(vocabulary.length * next() ** 2)]!;
  return (i) => {
    const sentences = Array.from({ length: 9 + Math.floor(next() * 5) }, () =>
      Array.from({ length: 12 + Math.floor(next() * 10) }, word).join(' '),
    );
    return `Study ${i}. ${sentences.join('. ')}.`;
  };
}

function textSource(next: () => number): (i: number) => string {
  if (!process.argv.includes('--scifact')) return generatedTexts(next);
  const docs = scifact();
  return (i) => `${docs[i % docs.length]!.text} (${i})`;
}

function unitVector(dimension: number, next: () => number): Float32Array {
  const vector = new Float32Array(dimension);
  let squares = 0;
  for (let i = 0; i < dimension; i++) {
    // Normal by Box–Muller: directions uniform on the sphere, as embeddings roughly are (random 512-d graphs are
    // harder for HNSW than real embeddings, which cluster).
    const x = Math.sqrt(-2 * Math.log(next() || 1e-12)) * Math.cos(2 * Math.PI * next());
    vector[i] = x;
    squares += x * x;
  }
  const norm = Math.sqrt(squares);
  return vector.map((x) => x / norm);
}

const base64 = (vector: Float32Array) =>
  Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');

async function writeLines(path: string, count: number, line: (i: number) => string): Promise<void> {
  const out = createWriteStream(path);
  for (let i = 0; i < count; i++) {
    if (!out.write(`${line(i)}\n`)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
}

/** Seconds spent in each stage of the write path, measured around the methods the corpus calls. */
const spent = { add: 0, store: 0, apply: 0, hnsw: 0, bm25: 0 };

function timed<T extends object>(prototype: T, method: keyof T & string, stage: keyof typeof spent): void {
  const original = prototype[method] as (...args: unknown[]) => Promise<unknown>;
  Object.assign(prototype, {
    async [method](this: unknown, ...args: unknown[]) {
      const started = performance.now();
      try {
        return await original.apply(this, args);
      } finally {
        spent[stage] += (performance.now() - started) / 1000;
      }
    },
  });
}

timed(Corpus.prototype, 'add', 'add');
timed(CorpusStore.prototype, 'upsert', 'store');
timed(DerivedIndexes.prototype, 'apply', 'apply');
timed(DenseIndex.prototype, 'add', 'hnsw');
timed(Bm25Index.prototype, 'addInSlices', 'bm25');

interface Measured {
  readonly label: string;
  readonly chunks: number;
  readonly seconds: number;
  /** CPU seconds of the process, every thread (the event loop, the store's writer, the HNSW worker, the model). */
  readonly cpu: number;
  readonly stages: typeof spent;
}

async function measure(
  label: string,
  file: string,
  encoder: Awaited<ReturnType<typeof benchEncoder>>,
): Promise<Measured> {
  const work = mkdtempSync(join(tmpdir(), 'rcp-bench-ingest-vectors-'));
  const corpus = new Corpus(benchCorpusSettings(work), encoder, silent);
  await corpus.ready;
  Object.assign(spent, { add: 0, store: 0, apply: 0, hnsw: 0, bm25: 0 });
  const cpu = process.cpuUsage();
  const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
  try {
    const summary = await ingest(
      corpus,
      [file],
      { chunk: false, contextual: false, batchSize: BATCH, limits: benchLimits(encoder.info.dimension) },
      quiet,
    );
    if (summary.rejectedCount > 0) throw new Error(`${label}: ${JSON.stringify(summary.rejected.slice(0, 3))}`);
    const { user, system } = process.cpuUsage(cpu);
    return {
      label,
      chunks: summary.chunks,
      seconds: summary.seconds,
      cpu: (user + system) / 1e6,
      stages: { ...spent },
    };
  } finally {
    await corpus.close();
    rmSync(work, { recursive: true, force: true });
  }
}

function benchLimits(dimension: number) {
  const { maxDocumentBytes, metadata } = benchCorpusSettings('');
  return { maxDocumentBytes, maxMetadataBytes: metadata.maxBytes, dimension };
}

function report({ label, chunks, seconds, cpu, stages }: Measured): void {
  const { add, store, apply, hnsw, bm25 } = stages;
  const share = (s: number) => `${s.toFixed(1)} s (${((100 * s) / seconds).toFixed(0)}%)`;
  console.log(
    `  ${label}: ${chunks} chunks in ${seconds.toFixed(1)} s = ${(chunks / seconds).toFixed(0)} chunks/s ` +
      `(${((1000 * cpu) / chunks).toFixed(2)} ms of CPU a chunk, all threads; load average ${loadavg()[0]!.toFixed(1)})\n` +
      `    store ${share(store)}  indexes ${share(apply)} (HNSW insert ${share(hnsw)} beside BM25 ${share(bm25)})  ` +
      `rest of the write (validate, hash, embed) ${share(add - store - apply)}  ` +
      `reading and parsing, not overlapped with a write ${share(seconds - add)}`,
  );
}

export async function benchIngestVectors(): Promise<void> {
  const counts = (process.env.RCP_BENCH_VECTORS ?? '20000,100000').split(',').map(Number);
  const encodedCount = Number(process.env.RCP_BENCH_ENCODED ?? 1000);
  const efConstructions = (process.env.RCP_BENCH_EF_CONSTRUCTION ?? '200,100')
    .split(',')
    .filter((value) => value !== '')
    .map(Number);
  const encoder = await benchEncoder();
  const { dimension } = encoder.info;
  const scratch = mkdtempSync(join(tmpdir(), 'rcp-bench-ingest-vectors-src-'));
  try {
    console.log(`\ningest-vectors: ${dimension}-d random unit vectors, batches of ${BATCH} (one transaction each)`);
    const next = seededRandom(1);
    const text = textSource(next);
    const encoded = join(scratch, 'encoded.jsonl');
    await writeLines(encoded, encodedCount, (i) => JSON.stringify({ _id: `e${i}`, text: text(i) }));
    report(await measure(`through the encoder, ${encodedCount} records`, encoded, encoder));
    for (const count of counts) {
      for (const form of ['base64', 'array'] as const) {
        if (form === 'array' && count !== counts[0]) continue;
        const file = join(scratch, `vectors-${count}-${form}.jsonl`);
        await writeLines(file, count, (i) => {
          const vector = unitVector(dimension, next);
          return JSON.stringify({
            _id: `v${i}`,
            text: text(i),
            vector: form === 'base64' ? base64(vector) : [...vector],
          });
        });
        report(await measure(`with vectors (${form}), ${count} records`, file, encoder));
        if (form === 'array' && efConstructions.length > 0) await hnswAlone(count, dimension, efConstructions);
        if (form === 'base64' && count === counts[0]) processRun(file, count);
        rmSync(file);
      }
    }
  } finally {
    await encoder.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * The HNSW insert alone (its worker, batches as ingest sends them) at each `index.efConstruction`, the rate of each
 * quarter of the count: how the graph's cost grows with its size, apart from the rest of the write.
 */
async function hnswAlone(count: number, dimension: number, efConstructions: readonly number[]): Promise<void> {
  const { space, m, efSearch } = benchCorpusSettings('');
  for (const efConstruction of efConstructions) {
    const next = seededRandom(2);
    const index = new DenseIndex();
    await index.reset({ space, dimension, m, efConstruction, efSearch, initialCapacity: 1024 });
    const rates: string[] = [];
    let started = performance.now();
    for (let at = 0; at < count; at += BATCH) {
      const labels = Array.from({ length: Math.min(BATCH, count - at) }, (_, i) => at + i);
      await index.add(
        labels,
        labels.map(() => unitVector(dimension, next)),
        dimension,
      );
      const done = at + labels.length;
      if (done % (count / 4) < BATCH || done === count) {
        rates.push(`${((count / 4 / (performance.now() - started)) * 1000).toFixed(0)}/s`);
        started = performance.now();
      }
    }
    await index.close();
    console.log(
      `  HNSW insert alone, ${count} vectors, M ${m}, efConstruction ${efConstruction}: by quarter ${rates.join(', ')}`,
    );
  }
}

/** `rcp-server ingest FILE` as a process into a fresh data dir: wall time, model load and start-up included. */
function processRun(file: string, count: number): void {
  const data = mkdtempSync(join(tmpdir(), 'rcp-bench-ingest-vectors-cli-'));
  const root = fileURLToPath(new URL('..', import.meta.url));
  const started = performance.now();
  const result = spawnSync(process.execPath, ['bin/rcp-server.js', 'ingest', '--data', data, file], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, RCP_LOG_LEVEL: 'warn' },
  });
  const seconds = (performance.now() - started) / 1000;
  rmSync(data, { recursive: true, force: true });
  const said = result.stdout.trim().split('\n')[0];
  console.log(`  rcp-server ingest as a process, ${count} records: ${seconds.toFixed(1)} s wall (${said})`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchIngestVectors();
}
