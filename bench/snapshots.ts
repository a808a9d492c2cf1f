/**
 * `npm run bench -- snapshots`: what §7.7.1 snapshots cost, over a corpus of RCP_BENCH_CHUNKS (default 20,000)
 * one-chunk documents (bench/corpus.ts `syntheticDir`), each figure beside a baseline of the same run:
 *
 * 1. Writes: index/add calls each replacing 200 documents, on a server keeping the window (`index.snapshots`) and on
 *    one keeping none (`versions: 0`), alternated on one dir; ms per call, and the server's RSS after them.
 * 2. After 5 × 1,000 replacements and 1,000 deletions, on a server keeping none and on one keeping the window: the
 *    store's size and RSS, and the removed rows kept; then retrieve latency (p50 of 3 rounds of 5 queries, each mode)
 *    unpinned, pinned to the current version and pinned to the version before those writes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { startHttpProcess, type ServerProcess } from '../test/helpers/processes.js';
import { call } from './client.js';
import { syntheticDir } from './corpus.js';
import { benchEncoder } from './settings.js';

const CHUNKS = Number(process.env.RCP_BENCH_CHUNKS ?? 20_000);
const WORDS = ['cell', 'protein', 'cancer', 'blood', 'gene', 'expression', 'mouse', 'risk', 'therapy', 'brain'];
const MODES = ['dense', 'sparse', 'hybrid'] as const;

function start(dir: string, versions: number): Promise<ServerProcess> {
  const env = { RCP_INDEX_SNAPSHOTS_VERSIONS: String(versions) };
  return startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir], env, { readyWithinMs: 3_600_000 });
}

function rssMiB(server: ServerProcess): number {
  const status = readFileSync(`/proc/${server.child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** Replaces documents `from` .. `from + n - 1` with new texts: one index/add; its ms. */
async function replace(origin: string, from: number, n: number, round: number): Promise<number> {
  const documents = Array.from({ length: n }, (_, i) => ({
    id: `doc-${from + i}`,
    text: `${WORDS[(from + i + round) % 10]} ${WORDS[(i * 7 + round) % 10]} replaced in round ${round}`,
  }));
  const started = performance.now();
  await call(origin, 'index/add', { documents });
  return performance.now() - started;
}

const median = (samples: number[]) => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;

/** Median retrieve latency (ms) per mode, at `indexVersion` (undefined: unpinned). */
async function latencies(origin: string, indexVersion: string | undefined): Promise<number[]> {
  const perMode: number[] = [];
  for (const mode of MODES) {
    const samples: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (let q = 0; q < 5; q++) {
        const query = `${WORDS[q]} ${WORDS[(q * 3 + 1) % 10]}`;
        const started = performance.now();
        await call(origin, 'retrieve', { query, k: 10, mode, includeText: false, indexVersion });
        samples.push(performance.now() - started);
      }
    }
    perMode.push(median(samples));
  }
  return perMode;
}

async function writes(dir: string): Promise<void> {
  const figures: Record<string, { ms: number[]; rss: number[] }> = {
    kept: { ms: [], rss: [] },
    none: { ms: [], rss: [] },
  };
  for (let round = 0; round < 4; round++) {
    const keep = round % 2 === 1;
    const server = await start(dir, keep ? 100 : 0);
    const figure = figures[keep ? 'kept' : 'none']!;
    for (let i = 0; i < 5; i++) figure.ms.push(await replace(server.origin, round * 1000 + i * 200, 200, round));
    figure.rss.push(rssMiB(server));
    await server.stop();
  }
  const [kept, none] = [figures.kept!, figures.none!];
  console.log(`snapshots, ${CHUNKS} chunks`);
  console.log(
    `  index/add of 200 replacements: ${median(kept.ms).toFixed(0)} ms keeping the window, ` +
      `${median(none.ms).toFixed(0)} ms keeping none (${(median(kept.ms) / median(none.ms)).toFixed(2)}x); ` +
      `RSS after ${Math.max(...kept.rss).toFixed(0)} MiB against ${Math.max(...none.rss).toFixed(0)} MiB`,
  );
}

/** 5 x 1,000 replacements and 1,000 deletions on a server keeping `versions`; its RSS, store and removed rows kept. */
async function churn(dir: string, versions: number, round: number) {
  const server = await start(dir, versions);
  const first = (await call(server.origin, 'retrieve', { query: 'cell', k: 1 })) as { indexVersion: string };
  const before = first.indexVersion;
  for (let i = 0; i < 5; i++) await replace(server.origin, i * 1000, 1000, round * 10 + i);
  const ids = Array.from({ length: 1000 }, (_, i) => `doc-${5000 + round * 1000 + i}`);
  const { indexVersion } = (await call(server.origin, 'index/delete', { ids })) as { indexVersion: string };
  const db = new Database(join(dir, 'corpus.sqlite'), { readonly: true });
  const kept = db.prepare('SELECT count(*) FROM retired_chunks').pluck().get() as number;
  // The bytes of the rows kept (the file keeps its freed pages, so its size says little).
  const bytes = db
    .prepare(
      'SELECT coalesce(sum(length(CAST(text AS BLOB)) + length(vector) + length(CAST(context AS BLOB))), 0) + ' +
        '(SELECT coalesce(sum(length(CAST(text AS BLOB)) + length(CAST(meta AS BLOB))), 0) FROM retired_documents) ' +
        'FROM retired_chunks',
    )
    .pluck()
    .get() as number;
  db.close();
  const megabytes = bytes / 2 ** 20;
  return { server, before, indexVersion, kept, megabytes, rss: rssMiB(server) };
}

async function reads(dir: string): Promise<void> {
  const none = await churn(dir, 0, 1);
  await none.server.stop();
  const kept = await churn(dir, 100, 2);
  try {
    console.log(
      `  after 5 x 1,000 replacements and 1,000 deletions: keeping the window, ${kept.kept} removed chunks kept, ` +
        `${kept.megabytes.toFixed(1)} MiB of rows in the store, RSS ${kept.rss.toFixed(0)} MiB; keeping none, ` +
        `${none.megabytes.toFixed(1)} MiB, RSS ${none.rss.toFixed(0)} MiB`,
    );
    const { origin } = kept.server;
    const unpinned = await latencies(origin, undefined);
    const current = await latencies(origin, kept.indexVersion);
    const earlier = await latencies(origin, kept.before);
    MODES.forEach((mode, i) => {
      console.log(
        `  retrieve ${mode.padEnd(6)} p50: unpinned ${unpinned[i]!.toFixed(1)} ms, pinned current ${current[i]!.toFixed(1)} ms ` +
          `(${(current[i]! / unpinned[i]!).toFixed(2)}x), pinned ${kept.before} (before the writes) ${earlier[i]!.toFixed(1)} ms ` +
          `(${(earlier[i]! / unpinned[i]!).toFixed(2)}x)`,
      );
    });
  } finally {
    await kept.server.stop();
  }
}

export async function benchSnapshots(): Promise<void> {
  const encoder = await benchEncoder();
  const dir = await syntheticDir(encoder, CHUNKS);
  await encoder.close();
  try {
    await (await start(dir, 100)).stop(); // builds both indexes and saves them at its stop
    await writes(dir);
    await reads(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
