/**
 * retrieve performance, every figure a ratio to a baseline measured in the same run:
 *
 * 1. Per mode over HTTP (a real server process): latency p50/p99 of sequential requests, and throughput with 8
 *    concurrent clients as a ratio to `ping` throughput on the same server (the protocol layer's share).
 * 2. HNSW recall@10 against exact search at the default efSearch, and its speed as a ratio to exact search.
 *
 * Corpora: BEIR SciFact (ingested here with the default encoder unless RCP_BENCH_SCIFACT_DIR names a data dir that
 * already holds it) and, with RCP_BENCH_SYNTHETIC=N, a synthetic corpus of N chunks made by perturbing SciFact's
 * embeddings (slow to build; RCP_BENCH_SYNTHETIC_DIR reuses one).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Corpus, contentHash } from '../src/corpus/corpus.js';
import type { UseLiteEncoder } from '../src/models/onnx/use-lite-encoder.js';
import { ingest } from '../src/ingest/ingest.js';
import { queryTexts, scifactPath } from './scifact.js';
import { benchCorpusSettings, benchEncoder } from './settings.js';
import { silentLogger as silent } from '../test/helpers/logger.js';

const QUERIES = 200;
const CLIENTS = 8;

const settings = benchCorpusSettings;

function queries(): string[] {
  return queryTexts().slice(0, QUERIES);
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

async function scifactDir(encoder: UseLiteEncoder): Promise<string> {
  const given = process.env.RCP_BENCH_SCIFACT_DIR;
  if (given !== undefined && existsSync(join(given, 'corpus.sqlite'))) return given;
  const dir = mkdtempSync(join(tmpdir(), 'rcp-bench-scifact-'));
  const corpus = new Corpus(settings(dir), encoder, silent);
  await corpus.ready;
  const quiet = new Writable({ write: (_c, _e, done) => done() });
  await ingest(corpus, [scifactPath('corpus.jsonl')], { chunk: false, contextual: false, batchSize: 64 }, quiet);
  await corpus.close();
  return dir;
}

async function overHttp(dir: string, label: string): Promise<void> {
  const port = 19_000 + Math.floor(Math.random() * 1000);
  const child = spawn(process.execPath, ['bin/rcp-server.js', 'serve', '--http', `127.0.0.1:${port}`, '--data', dir], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, RCP_LOG_LEVEL: 'info' },
  });
  await new Promise<void>((resolve) =>
    child.stderr.on('data', (chunk: Buffer) => chunk.includes('corpus ready') && resolve()),
  );
  let requestId = 0;
  const post = async (method: string, params: object) => {
    const response = await fetch(`http://127.0.0.1:${port}/rcp/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++requestId, method, params }),
    });
    const reply = (await response.json()) as { error?: unknown };
    if (reply.error !== undefined) throw new Error(JSON.stringify(reply.error));
  };
  const texts = queries();
  const throughput = async (method: string, params: (i: number) => object) => {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < texts.length) await post(method, params(next++));
      }),
    );
    return texts.length / ((performance.now() - started) / 1000);
  };
  await post('retrieve', { query: 'warm up', k: 10 });
  const ping = await throughput('ping', () => ({}));
  console.log(
    `retrieve over HTTP on ${label} (k 10; throughput with ${CLIENTS} clients as a ratio to ping on the same server)`,
  );
  console.log(`  ping                  ${ping.toFixed(0).padStart(6)} req/s   ratio 1.000`);
  for (const mode of ['sparse', 'dense', 'hybrid'] as const) {
    const latencies: number[] = [];
    for (const query of texts) {
      const started = performance.now();
      await post('retrieve', { query, k: 10, mode, includeText: false });
      latencies.push(performance.now() - started);
    }
    latencies.sort((a, b) => a - b);
    const rate = await throughput('retrieve', (i) => ({ query: texts[i], k: 10, mode, includeText: false }));
    console.log(
      `  retrieve ${mode.padEnd(7)}      ${rate.toFixed(0).padStart(6)} req/s   ratio ${(rate / ping).toFixed(3)}   ` +
        `p50 ${percentile(latencies, 0.5).toFixed(1)} ms  p99 ${percentile(latencies, 0.99).toFixed(1)} ms`,
    );
  }
  child.kill('SIGTERM');
}

export async function annRecall(dir: string, encoder: UseLiteEncoder, label: string): Promise<void> {
  const corpus = new Corpus(settings(dir), encoder, silent);
  await corpus.ready;
  const labels = await corpus.labelsWhere(() => true);
  // Exact search as an exact index would run it: every stored vector in memory, one dot product each.
  const stored = labels.map((label) => corpus.vectorOf(label)!);
  const vectors = await encoder.embed(queries(), 'query');
  await corpus.searchDense(vectors[0]!, 10); // warm-up
  let started = performance.now();
  const annResults: { label: number }[][] = [];
  for (const vector of vectors) annResults.push(await corpus.searchDense(vector, 10));
  const annMs = performance.now() - started;
  started = performance.now();
  const exactResults = vectors.map((vector) =>
    stored
      .map((candidate, i) => {
        let dot = 0;
        for (let d = 0; d < candidate.length; d++) dot += candidate[d]! * vector[d]!;
        return { label: labels[i]!, dot };
      })
      .sort((a, b) => b.dot - a.dot)
      .slice(0, 10)
      .map((x) => x.label),
  );
  const exactMs = performance.now() - started;
  let found = 0;
  annResults.forEach((ann, q) => {
    const truth = new Set(exactResults[q]);
    found += ann.filter((hit) => truth.has(hit.label)).length;
  });
  await corpus.close();
  console.log(
    `HNSW on ${label} (efSearch ${settings(dir).efSearch}, ${vectors.length} queries; speed as a ratio to exact search over stored vectors)`,
  );
  console.log(
    `  recall@10 vs exact ${(found / (vectors.length * 10)).toFixed(4)}   exact ${(exactMs / vectors.length).toFixed(2)} ms/query ratio 1.000   HNSW ${(annMs / vectors.length).toFixed(2)} ms/query ratio ${(annMs / exactMs).toFixed(4)}`,
  );
}

/**
 * A synthetic corpus with the structure of real text embeddings: chunk i is SciFact document (i mod 5,183)'s stored
 * USE-lite vector plus Gaussian-like noise (σ ≈ 0.02 per component, about a third of the vector's own spread),
 * renormalised; its text is random SciFact query words. Uniform random vectors would have no neighbourhoods at all,
 * which no ANN index, nor any real encoder, produces.
 */
async function synthetic(encoder: UseLiteEncoder, size: number, scifactDir: string): Promise<string> {
  const source = new Corpus(settings(scifactDir), encoder, silent);
  await source.ready;
  const bases = (await source.labelsWhere(() => true)).map((label) => source.vectorOf(label)!);
  await source.close();
  const dir = mkdtempSync(join(tmpdir(), 'rcp-bench-synthetic-'));
  const corpus = new Corpus(settings(dir), encoder, silent);
  await corpus.ready;
  const words = readFileSync(scifactPath('queries.jsonl'), 'utf8')
    .split(/\W+/)
    .filter((w) => w.length > 3);
  let state = 7;
  const random = () => (state = (state * 1664525 + 1013904223) >>> 0) / 2 ** 32;
  for (let start = 0; start < size; start += 1000) {
    const documents = Array.from({ length: Math.min(1000, size - start) }, (_, i) => {
      const text = Array.from({ length: 40 }, () => words[Math.floor(random() * words.length)]).join(' ');
      const base = bases[(start + i) % bases.length]!;
      const noisy = Float32Array.from(base, (v) => v + (random() + random() + random() - 1.5) * 0.04);
      const norm = Math.hypot(...noisy);
      const vector = noisy.map((v) => v / norm);
      return {
        id: `s${start + i}`,
        text,
        meta: {},
        hash: contentHash(text, {}, { chunk: false, contextual: false }),
        origin: 'operator' as const,
        chunks: [{ text, context: '', start: 0, end: text.length, vector }],
      };
    });
    await corpus.store.upsert(documents);
  }
  await corpus.close();
  // The filler applied nothing to its dense index, so what it saved is not the corpus: remove it to force a build.
  for (const name of readdirSync(dir)) if (name.endsWith('.hnsw')) rmSync(join(dir, name));
  return dir;
}

export async function benchRetrieve(): Promise<void> {
  const encoder = await benchEncoder();
  const scifact = await scifactDir(encoder);
  await annRecall(scifact, encoder, 'SciFact (5,183 chunks)');
  await overHttp(scifact, 'SciFact (5,183 chunks)');
  const size = Number(process.env.RCP_BENCH_SYNTHETIC ?? 0);
  if (size > 0) {
    // RCP_BENCH_SYNTHETIC_DIR reuses a synthetic data dir an earlier run built (and saved).
    const reuse = process.env.RCP_BENCH_SYNTHETIC_DIR;
    const dir =
      reuse !== undefined && existsSync(join(reuse, 'corpus.sqlite')) ? reuse : await synthetic(encoder, size, scifact);
    await annRecall(dir, encoder, `a synthetic corpus (${size} perturbed SciFact chunks)`);
    await overHttp(dir, `a synthetic corpus (${size} perturbed SciFact chunks)`);
  }
  await encoder.close();
}
