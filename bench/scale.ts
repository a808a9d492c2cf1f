/**
 * `npm run bench -- scale`: a corpus of RCP_BENCH_CHUNKS (default 1,000,000) one-chunk documents (SciFact sentences,
 * random unit vectors, written to the store directly) served over HTTP, each figure as a ratio to a baseline of the
 * same run:
 *
 * 1. Time to ready: the first start (both indexes built from the store), a restart from the saved files (the dense
 *    index and the lexical index saved with it), the same restart with the lexical file removed (the lexical index
 *    analysed again from every chunk's text, as every start did before it was saved), and a restart after kill -9
 *    with 1,000 writes after the last save (replayed from the store).
 * 2. Resident memory per chunk: the server's RSS once ready, less an empty server's, over the chunks.
 *    Where it goes, measured in this process on the same texts: the lexical index built by analysis and restored
 *    from its saved file, and what the corpus keeps of each chunk's place and each document (`ChunkPlaces`) against
 *    the Maps of objects it replaced; the vectors are the dimension's 4 bytes each.
 * 3. One client's retrieve latency, p50 and p95 of 200 queries, sparse, dense and hybrid, against the same on a
 *    5,000-chunk corpus in the same run.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ChunkPlaces } from '../src/corpus/chunk-places.js';
import { Bm25Index } from '../src/lexical/bm25.js';
import { readLexical, writeLexical } from '../src/lexical/saved-lexical.js';
import { startHttpProcess, type ServerProcess } from '../test/helpers/processes.js';
import { call } from './client.js';
import { syntheticDir, syntheticTexts } from './corpus.js';
import { benchEncoder } from './settings.js';

const CHUNKS = Number(process.env.RCP_BENCH_CHUNKS ?? 1_000_000);
const SMALL = 5_000;
const QUERIES = 200;
const WORDS = ['cell', 'protein', 'cancer', 'blood', 'gene', 'expression', 'mouse', 'risk', 'therapy', 'brain'];

interface Started {
  readonly ms: number;
  readonly server: ServerProcess;
}

async function timedStart(dir: string): Promise<Started> {
  const started = performance.now();
  const server = await startHttpProcess(
    ['serve', '--http', '127.0.0.1:0', '--data', dir],
    {},
    { readyWithinMs: 7_200_000 },
  );
  return { ms: performance.now() - started, server };
}

/** The process's resident set, from /proc (Linux). */
function rssBytes(server: ServerProcess): number {
  const status = readFileSync(`/proc/${server.child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1).padStart(7)} s`;

/** p50 and p95 (ms) of one client's retrieves in `mode`, queries of two or three common SciFact words. */
async function latency(origin: string, mode: string): Promise<[number, number]> {
  const samples: number[] = [];
  for (let i = 0; i < QUERIES; i++) {
    const query = [WORDS[i % 10], WORDS[(i * 3 + 1) % 10], i % 2 === 0 ? WORDS[(i * 7 + 2) % 10] : ''].join(' ');
    const started = performance.now();
    await call(origin, 'retrieve', { query, k: 10, mode, includeText: false });
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return [samples[Math.floor(QUERIES * 0.5)]!, samples[Math.floor(QUERIES * 0.95)]!];
}

async function readiness(dir: string): Promise<ServerProcess> {
  const first = await timedStart(dir);
  await first.server.stop(); // saves both indexes
  const saved = await timedStart(dir);
  await saved.server.stop();
  for (const name of readdirSync(dir)) if (name.endsWith('.bm25')) rmSync(join(dir, name));
  const lexicalRebuilt = await timedStart(dir);
  await lexicalRebuilt.server.stop(); // saves both again
  const before = await timedStart(dir);
  for (let i = 0; i < 100; i++) {
    const documents = Array.from({ length: 10 }, (_, j) => ({ id: `late-${i}-${j}`, text: `late write ${i} ${j}` }));
    await call(before.server.origin, 'index/add', { documents });
  }
  before.server.child.kill('SIGKILL');
  const killed = await timedStart(dir);
  console.log(`time to ready, ${CHUNKS} chunks (ratio to a restart with the lexical index analysed again, same run)`);
  console.log(
    `  first start (both indexes built)          ${seconds(first.ms)}  ratio ${(first.ms / lexicalRebuilt.ms).toFixed(3)}`,
  );
  console.log(`  lexical index analysed again (baseline)   ${seconds(lexicalRebuilt.ms)}  ratio 1.000`);
  console.log(
    `  restart from the saved files              ${seconds(saved.ms)}  ratio ${(saved.ms / lexicalRebuilt.ms).toFixed(3)}`,
  );
  console.log(
    `  after kill -9, 1,000 writes to replay     ${seconds(killed.ms)}  ratio ${(killed.ms / lexicalRebuilt.ms).toFixed(3)}`,
  );
  return killed.server;
}

/** Heap and array-buffer bytes in use after a full collection. */
function heldBytes(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

/** Bytes per chunk of what the corpus holds per chunk besides its vector, measured on `chunks` synthetic texts. */
export async function breakdown(chunks: number): Promise<void> {
  const textOf = syntheticTexts();
  const options = { k1: 1.2, b: 0.75, stem: true, fields: { title: 1.5 } };
  const base = heldBytes();
  const built = new Bm25Index(options);
  for (let n = 0; n < chunks; n++) built.add(n + 1, textOf(n), {});
  const builtBytes = heldBytes() - base;
  const dir = mkdtempSync(join(tmpdir(), 'rcp-bench-scale-'));
  const identity = { seq: 1, store: 'bench', options };
  await writeLexical(join(dir, 'index.bm25'), built, identity);
  const restored = await readLexical(join(dir, 'index.bm25'), identity);
  // Its runs of terms are built once the corpus serves: counted, as a serving process holds them.
  if (typeof restored !== 'string') await restored.runsBuilt();
  const restoredBytes = heldBytes() - base - builtBytes;
  rmSync(dir, { recursive: true, force: true });
  // A document of one chunk each: the per-document part is all counted against its one chunk.
  const places = new ChunkPlaces();
  const before = heldBytes();
  for (let n = 0; n < chunks; n++) {
    // As the corpus holds them: ids as the store's rows hand them over (a string each); no metadata; these
    // documents' origin is ingest's, not the default.
    places.setDocument(`doc-${n}`, undefined, 'operator');
    places.set(n + 1, `doc-${n}`, 0);
  }
  const mapBytes = heldBytes() - before;
  // The same as the corpus kept them before ChunkPlaces, a Map of place objects and one of origins: the baseline.
  const objects = new Map<number, { docId: string; ordinal: number }>();
  const origins = new Map<string, string>();
  const beforeObjects = heldBytes();
  for (let n = 0; n < chunks; n++) {
    objects.set(n + 1, { docId: `doc-${n}`, ordinal: 0 });
    origins.set(`doc-${n}`, 'operator');
  }
  const objectBytes = heldBytes() - beforeObjects;
  const per = (bytes: number) => `${(bytes / chunks).toFixed(0).padStart(5)} B`;
  console.log(`what each chunk holds in memory besides its vector (${chunks} synthetic chunks, this process)`);
  console.log(`  lexical index, built by analysis          ${per(builtBytes)}`);
  console.log(`  lexical index, restored from its file     ${per(restoredBytes)}`);
  console.log(`  places, metadata and origins (ChunkPlaces) ${per(mapBytes)}`);
  console.log(`    the same as Maps of objects              ${per(objectBytes)} (what the corpus held before)`);
  void [built, restored, places, origins, objects]; // held until measured
}

export async function benchScale(): Promise<void> {
  const encoder = await benchEncoder();
  const big = await syntheticDir(encoder, CHUNKS);
  const small = await syntheticDir(encoder, SMALL);
  const empty = await syntheticDir(encoder, 0);
  await encoder.close();
  const servers: ServerProcess[] = [];
  try {
    const large = await readiness(big);
    servers.push(large);
    const idle = (await timedStart(empty)).server;
    servers.push(idle);
    const perChunk = (rssBytes(large) - rssBytes(idle)) / CHUNKS;
    console.log(
      `resident memory: ${(rssBytes(large) / 2 ** 30).toFixed(2)} GiB serving ${CHUNKS} chunks, ` +
        `${(rssBytes(idle) / 2 ** 20).toFixed(0)} MiB empty: ${(perChunk / 1024).toFixed(2)} KiB per chunk`,
    );
    await breakdown(Math.min(CHUNKS, 200_000));
    const reference = (await timedStart(small)).server;
    servers.push(reference);
    console.log(`one client's retrieve, k 10, ${QUERIES} queries (ratio to the same at ${SMALL} chunks, same run)`);
    for (const mode of ['sparse', 'dense', 'hybrid']) {
      const [p50, p95] = await latency(large.origin, mode);
      const [p50Small, p95Small] = await latency(reference.origin, mode);
      console.log(
        `  ${mode.padEnd(7)} p50 ${p50.toFixed(1).padStart(6)} ms (${(p50 / p50Small).toFixed(2)}x)  ` +
          `p95 ${p95.toFixed(1).padStart(6)} ms (${(p95 / p95Small).toFixed(2)}x)`,
      );
    }
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    for (const dir of [big, small, empty]) rmSync(dir, { recursive: true, force: true });
  }
}
