/**
 * `npm run bench -- backup`: `rcp-server backup` and `rcp-server restore` over a corpus of RCP_BENCH_CHUNKS (default
 * 30,000) one-chunk documents (bench/corpus.ts `syntheticDir`), each figure beside a baseline of the same run:
 *
 * 1. The backup of a serving dir while one client retrieves (sparse, k 10) and another writes (10 documents a call)
 *    without pause: its time and rate, the reader's p50/p95 and the writes answered per second during it, against
 *    the same reader and writer for 5 s before it.
 * 2. The restore into an empty dir: its time and rate.
 * 3. Time to ready of a server on the restored dir against a restart on the original (both from saved files; the
 *    faster of two starts each, alternated).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand } from '../test/helpers/children.js';
import { startHttpProcess, type ServerProcess } from '../test/helpers/processes.js';
import { call } from './client.js';
import { syntheticDir } from './corpus.js';
import { benchEncoder } from './settings.js';

const CHUNKS = Number(process.env.RCP_BENCH_CHUNKS ?? 30_000);
const WORDS = ['cell', 'protein', 'cancer', 'blood', 'gene', 'expression', 'mouse', 'risk', 'therapy', 'brain'];

async function timedStart(dir: string): Promise<{ ms: number; server: ServerProcess }> {
  const started = performance.now();
  const server = await startHttpProcess(
    ['serve', '--http', '127.0.0.1:0', '--data', dir],
    {},
    { readyWithinMs: 3_600_000 },
  );
  return { ms: performance.now() - started, server };
}

/** Retrieves in a loop until `stop()` holds; the latency of each (ms). */
async function reader(origin: string, stop: () => boolean): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; !stop(); i++) {
    const query = `${WORDS[i % 10]} ${WORDS[(i * 3 + 1) % 10]}`;
    const started = performance.now();
    await call(origin, 'retrieve', { query, k: 10, mode: 'sparse', includeText: false });
    samples.push(performance.now() - started);
  }
  return samples;
}

/** Writes 10 documents a call until `stop()` holds; the calls answered. */
async function writer(origin: string, stop: () => boolean): Promise<number> {
  let calls = 0;
  for (; !stop(); calls++) {
    const documents = Array.from({ length: 10 }, (_, j) => ({ id: `w-${calls}-${j}`, text: `written ${calls} ${j}` }));
    await call(origin, 'index/add', { documents });
  }
  return calls;
}

/** What a reader and a writer got while `work` ran. */
async function traffic<T>(origin: string, work: () => Promise<T>) {
  let done = false;
  const reading = reader(origin, () => done);
  const writing = writer(origin, () => done);
  const started = performance.now();
  const result = await work();
  const ms = performance.now() - started;
  done = true;
  const [reads, writes] = await Promise.all([reading, writing]);
  return { result, ms, reads, writes };
}

const perSecond = ({ writes, ms }: { writes: number; ms: number }) => (writes / (ms / 1000)).toFixed(1);

/** The time to ready of one start on `dir` (stopped at once). */
async function startOnce(dir: string): Promise<number> {
  const { ms, server } = await timedStart(dir);
  await server.stop();
  return ms;
}

const quantile = (samples: number[], q: number) =>
  [...samples].sort((a, b) => a - b)[Math.floor(samples.length * q)] ?? Number.NaN;
const rate = (bytes: number, ms: number) => `${(bytes / 2 ** 20 / (ms / 1000)).toFixed(0)} MiB/s`;

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await work();
  return [result, performance.now() - started];
}

export async function benchBackup(): Promise<void> {
  const encoder = await benchEncoder();
  const dir = await syntheticDir(encoder, CHUNKS);
  await encoder.close();
  const work = mkdtempSync(join(tmpdir(), 'rcp-bench-backup-'));
  const servers: ServerProcess[] = [];
  try {
    await (await timedStart(dir)).server.stop(); // builds both indexes and saves them at its stop
    const original = await timedStart(dir);
    servers.push(original.server);
    const { origin } = original.server;
    const before = await traffic(origin, () => new Promise((resolve) => setTimeout(resolve, 5_000)));
    const archive = join(work, 'corpus.tar');
    const during = await traffic(origin, () => runCommand(['backup', '--data', dir, '--to', archive]));
    if (during.result.code !== 0) throw new Error(`backup: ${during.result.stderr}`);
    const bytes = statSync(archive).size;
    const ratio = (q: number) => (quantile(during.reads, q) / quantile(before.reads, q)).toFixed(2);
    console.log(`backup and restore, ${CHUNKS} chunks (${(bytes / 2 ** 20).toFixed(0)} MiB archive)`);
    console.log(`  backup while serving    ${(during.ms / 1000).toFixed(1).padStart(6)} s  ${rate(bytes, during.ms)}`);
    console.log(
      `    a reader beside it and a writer: p50 ${quantile(during.reads, 0.5).toFixed(1)} ms (${ratio(0.5)}x without it), ` +
        `p95 ${quantile(during.reads, 0.95).toFixed(1)} ms (${ratio(0.95)}x); ` +
        `${perSecond(during)} writes/s answered (${perSecond(before)} without it)`,
    );
    console.log(`    ${during.result.stdout.trim()}`);

    const restored = join(work, 'restored');
    const [restore, restoreMs] = await timed(() => runCommand(['restore', archive, '--data', restored]));
    if (restore.code !== 0) throw new Error(`restore: ${restore.stderr}`);
    console.log(`  restore                 ${(restoreMs / 1000).toFixed(1).padStart(6)} s  ${rate(bytes, restoreMs)}`);
    await original.server.stop();
    servers.length = 0;
    const fastest = async (on: string) => Math.min(...[await startOnce(on), await startOnce(on)]);
    const [restart, onCopy] = [await fastest(dir), await fastest(restored)];
    console.log(
      `  ready on the restored dir ${(onCopy / 1000).toFixed(1).padStart(4)} s, ` +
        `${(onCopy / restart).toFixed(2)}x a restart of the original (${(restart / 1000).toFixed(1)} s)`,
    );
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    for (const path of [dir, work]) rmSync(path, { recursive: true, force: true });
  }
}
