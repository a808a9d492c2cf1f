/**
 * Replicas over a PostgreSQL store of record (`store.url`), as ratios to baselines measured in the same run:
 *
 * 1. Read throughput (sparse `retrieve` over HTTP, 8 concurrent clients, round-robin) with 1, 2 and 3 replicas, as a
 *    ratio to one SQLite server holding the same corpus (SciFact abstracts with random vectors: sparse reads do not
 *    look at them). On a 2-core machine, replicas share the cores, so the figure is the cost per replica, not scale.
 * 2. Write-to-visible lag: index/add on one replica, then how long until each other replica serves the document.
 * 3. Replica cold start with RCP_BENCH_CHUNKS (default 100,000) chunks: from the store alone (an empty data dir)
 *    versus from its local snapshot (the same dir after a clean stop), and a new replica from a backup of that dir
 *    (`rcp-server backup`, `rcp-server restore` into an empty dir, then its start: the three together).
 *
 * Needs Debian's postgresql (a cluster is made in a temporary dir) and a built dist/ (npm run bench builds it).
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corpus, contentHash } from '../src/corpus/corpus.js';
import type { UseLiteEncoder } from '../src/models/onnx/use-lite-encoder.js';
import { PostgresStore } from '../src/corpus/store/postgres/postgres-store.js';
import type { NewDocument } from '../src/corpus/store/writes.js';
import { runCommand } from '../test/helpers/children.js';
import { HAS_POSTGRES, PostgresCluster } from '../test/helpers/postgres.js';
import { startHttpProcess, type ServerProcess } from '../test/helpers/processes.js';
import { randomUnit } from './corpus.js';
import { benchCorpusSettings, benchEncoder } from './settings.js';
import { corpus as scifact } from './scifact.js';
import { silentLogger as silent } from '../test/helpers/logger.js';

const CHUNKS = Number(process.env.RCP_BENCH_CHUNKS ?? 100_000);
const READ_SECONDS = Number(process.env.RCP_BENCH_SECONDS ?? 6);
const CLIENTS = 8;

function documentOf(id: string, text: string, dimension: number, seed: number): NewDocument {
  const vector = randomUnit(dimension, seed);
  return {
    ...{ id, text, meta: {}, origin: 'operator' as const },
    hash: contentHash(text, {}, { chunk: false, contextual: false }),
    chunks: [{ text, context: '', start: 0, end: text.length, vector }],
  };
}

/** One call; a -32011 refusal (the server's admission, §12.2 retryable) is retried after its `retryAfterMs`. */
async function call(origin: string, method: string, params: object): Promise<Record<string, unknown>> {
  for (;;) {
    const response = await fetch(`${origin}/rcp/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const frame = (await response.json()) as {
      result?: Record<string, unknown>;
      error?: { code: number; data?: { retryAfterMs?: number } };
    };
    if (frame.result !== undefined) return frame.result;
    if (frame.error?.code !== -32011) throw new Error(`${method}: ${JSON.stringify(frame.error)}`);
    await new Promise((resolve) => setTimeout(resolve, frame.error?.data?.retryAfterMs ?? 10));
  }
}

/** Sparse retrieves by CLIENTS concurrent clients, round-robin over `origins`, for READ_SECONDS: queries a second. */
async function readRate(origins: readonly string[], queries: readonly string[]): Promise<number> {
  const until = performance.now() + READ_SECONDS * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (let i = client; performance.now() < until; i += CLIENTS) {
        await call(origins[i % origins.length]!, 'retrieve', {
          query: queries[i % queries.length],
          k: 10,
          mode: 'sparse',
        });
        done++;
      }
    }),
  );
  return done / READ_SECONDS;
}

const serve = (dir: string, env: Record<string, string> = {}) =>
  startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir], env);

async function throughput(cluster: PostgresCluster, encoder: UseLiteEncoder): Promise<ServerProcess[]> {
  const docs = scifact();
  const documents = docs.map((doc, i) => documentOf(doc.id, doc.text, encoder.info.dimension, i + 1));
  const store = await PostgresStore.open(cluster.url);
  for (let i = 0; i < documents.length; i += 500) await store.upsert(documents.slice(i, i + 500));
  await store.close();
  const sqliteDir = mkdtempSync(join(tmpdir(), 'rcp-bench-sqlite-'));
  const seed = new Corpus(benchCorpusSettings(sqliteDir), encoder, silent);
  await seed.ready;
  for (let i = 0; i < documents.length; i += 500) await seed.store.upsert(documents.slice(i, i + 500));
  await seed.close();
  // The seed applied nothing to its dense index, so what it saved is not the corpus: the server rebuilds it.
  for (const name of readdirSync(sqliteDir)) if (name.endsWith('.hnsw')) rmSync(join(sqliteDir, name));

  const queries = docs.slice(0, 300).map((doc) => doc.text.split(/\s+/).slice(0, 6).join(' '));
  const single = await serve(sqliteDir);
  const baseline = await readRate([single.origin], queries);
  await single.stop();
  console.log(
    `sparse retrieve over HTTP, ${docs.length} docs, ${CLIENTS} clients (ratio to one SQLite server, same run)`,
  );
  console.log(`  one SQLite server          ${baseline.toFixed(0).padStart(6)} q/s  ratio 1.000`);
  const replicas: ServerProcess[] = [];
  for (let n = 1; n <= 3; n++) {
    const dir = mkdtempSync(join(tmpdir(), 'rcp-bench-replica-'));
    replicas.push(await serve(dir, { RCP_STORE_URL: cluster.url, RCP_STORE_POLL_MS: '1000' }));
    const rate = await readRate(
      replicas.map((replica) => replica.origin),
      queries,
    );
    console.log(
      `  ${n} replica${n > 1 ? 's' : ' '} (PostgreSQL)    ${rate.toFixed(0).padStart(6)} q/s  ratio ${(rate / baseline).toFixed(3)}`,
    );
  }
  rmSync(sqliteDir, { recursive: true, force: true });
  return replicas;
}

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

/** index/add on replica 0, then each other replica polled every 2 ms until it serves the new document. */
async function lag(replicas: readonly ServerProcess[]): Promise<void> {
  const samples: number[] = [];
  for (let i = 0; i < 40; i++) {
    const word = `lagword${i}x${Date.now()}`;
    await call(replicas[0]!.origin, 'index/add', { documents: [{ id: `lag-${i}`, text: `${word} measured` }] });
    const acknowledged = performance.now();
    await Promise.all(
      replicas.slice(1).map(async (replica) => {
        for (;;) {
          const result = await call(replica.origin, 'retrieve', { query: word, k: 1, mode: 'sparse' });
          if ((result.hits as unknown[]).length > 0) break;
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
        samples.push(performance.now() - acknowledged);
      }),
    );
  }
  samples.sort((a, b) => a - b);
  console.log(
    `write-to-visible lag on the other replicas (after the writer's acknowledgement), ${samples.length} samples`,
  );
  console.log(
    `  p50 ${percentile(samples, 0.5).toFixed(1)} ms   p99 ${percentile(samples, 0.99).toFixed(1)} ms   max ${samples.at(-1)!.toFixed(1)} ms`,
  );
}

async function coldStart(cluster: PostgresCluster, encoder: UseLiteEncoder): Promise<void> {
  const store = await PostgresStore.open(cluster.url);
  const sentences = scifact()
    .flatMap((doc) => doc.text.split(/(?<=\.)\s+/))
    .filter((s) => s.length > 40);
  const have = Number(cluster.sql('SELECT count(*) FROM rcp_chunks'));
  for (let start = have; start < CHUNKS; start += 1000) {
    const documents = Array.from({ length: Math.min(1000, CHUNKS - start) }, (_, i) => {
      const n = start + i;
      const text = `${sentences[n % sentences.length]!} ${sentences[(n * 7) % sentences.length]!}`;
      return documentOf(`synthetic-${n}`, text, encoder.info.dimension, n + 1);
    });
    await store.upsert(documents);
  }
  await store.close();
  const dir = mkdtempSync(join(tmpdir(), 'rcp-bench-cold-'));
  const timeToReady = async (on = dir) => {
    const settings = { ...benchCorpusSettings(on), store: { url: cluster.url, pollMs: 1000 } };
    const started = performance.now();
    const corpus = new Corpus(settings, encoder, silent);
    await corpus.ready;
    const ms = performance.now() - started;
    const { chunks } = await corpus.stats();
    await corpus.close(); // saves the dense index: the snapshot the next start loads
    return { ms, chunks };
  };
  const fromStore = await timeToReady();
  const fromSnapshot = await timeToReady();
  const [fromBackup, parts] = await newReplicaFromBackup(dir, timeToReady);
  console.log(`replica cold start, ${fromStore.chunks} chunks (ratio to a start from the store alone, same run)`);
  console.log(`  from the store (empty dir)   ${(fromStore.ms / 1000).toFixed(1).padStart(6)} s  ratio 1.000`);
  console.log(
    `  from its snapshot + the log  ${(fromSnapshot.ms / 1000).toFixed(1).padStart(6)} s  ratio ${(fromSnapshot.ms / fromStore.ms).toFixed(3)}`,
  );
  console.log(
    `  a new replica from a backup  ${(fromBackup / 1000).toFixed(1).padStart(6)} s  ratio ${(fromBackup / fromStore.ms).toFixed(3)}  (${parts})`,
  );
  rmSync(dir, { recursive: true, force: true });
}

/** Backup of `dir`, restore into a new dir, start there: the total (ms), and each part in words. */
async function newReplicaFromBackup(
  dir: string,
  timeToReady: (on: string) => Promise<{ ms: number }>,
): Promise<[number, string]> {
  const work = mkdtempSync(join(tmpdir(), 'rcp-bench-replica-backup-'));
  try {
    const archive = join(work, 'replica.tar');
    const timed = async (args: string[]) => {
      const started = performance.now();
      const run = await runCommand(args);
      if (run.code !== 0) throw new Error(`${args[0]}: ${run.stderr}`);
      return performance.now() - started;
    };
    const backup = await timed(['backup', '--data', dir, '--to', archive]);
    const restore = await timed(['restore', archive, '--data', join(work, 'new')]);
    const { ms } = await timeToReady(join(work, 'new'));
    const parts = [`backup ${backup}`, `restore ${restore}`, `start ${ms}`].map((part) =>
      part.replace(/[\d.]+$/, (n) => `${(Number(n) / 1000).toFixed(1)} s`),
    );
    return [backup + restore + ms, parts.join(', ')];
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export async function benchReplicas(): Promise<void> {
  if (!HAS_POSTGRES) throw new Error('the replicas bench needs PostgreSQL (Debian: apt-get install postgresql)');
  const cluster = await PostgresCluster.create();
  const encoder = await benchEncoder();
  try {
    const replicas = await throughput(cluster, encoder);
    await lag(replicas);
    await Promise.all(replicas.map((replica) => replica.stop()));
    await coldStart(cluster, encoder);
  } finally {
    await encoder.close();
    cluster.destroy();
  }
}
