/**
 * `npm run bench -- backup`: `rcp-server backup` and `rcp-server restore` over a corpus of RCP_BENCH_CHUNKS (default
 * 30,000) one-chunk documents (bench/corpus.ts `syntheticDir`), each figure beside a baseline of the same run:
 *
 * 1. The backup of a serving dir while one client retrieves (sparse, k 10) and another writes (10 documents a call)
 *    without pause: its time and rate, the reader's p50/p95 during it against the same reader before it, the
 *    writes answered meanwhile.
 * 2. The restore into an empty dir: its time and rate.
 * 3. Time to ready of a server on the restored dir against a restart on the original (both from saved files).
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
    const idle = await reader(
      origin,
      (
        (end) => () =>
          performance.now() > end
      )(performance.now() + 5_000),
    );

    let done = false;
    const reading = reader(origin, () => done);
    const writing = writer(origin, () => done);
    const archive = join(work, 'corpus.tar');
    const [backup, backupMs] = await timed(() => runCommand(['backup', '--data', dir, '--to', archive]));
    done = true;
    const [during, writes] = await Promise.all([reading, writing]);
    if (backup.code !== 0) throw new Error(`backup: ${backup.stderr}`);
    const bytes = statSync(archive).size;
    console.log(`backup and restore, ${CHUNKS} chunks (${(bytes / 2 ** 20).toFixed(0)} MiB archive)`);
    console.log(`  backup while serving    ${(backupMs / 1000).toFixed(1).padStart(6)} s  ${rate(bytes, backupMs)}`);
    console.log(
      `    a reader beside it: p50 ${quantile(during, 0.5).toFixed(1)} ms (${(quantile(during, 0.5) / quantile(idle, 0.5)).toFixed(2)}x before), ` +
        `p95 ${quantile(during, 0.95).toFixed(1)} ms (${(quantile(during, 0.95) / quantile(idle, 0.95)).toFixed(2)}x); ` +
        `${writes} writes answered meanwhile`,
    );
    console.log(`    ${backup.stdout.trim()}`);

    const restored = join(work, 'restored');
    const [restore, restoreMs] = await timed(() => runCommand(['restore', archive, '--data', restored]));
    if (restore.code !== 0) throw new Error(`restore: ${restore.stderr}`);
    console.log(`  restore                 ${(restoreMs / 1000).toFixed(1).padStart(6)} s  ${rate(bytes, restoreMs)}`);
    await original.server.stop();
    servers.length = 0;
    const again = await timedStart(dir);
    servers.push(again.server);
    await again.server.stop();
    const copy = await timedStart(restored);
    servers.push(copy.server);
    console.log(
      `  ready on the restored dir ${(copy.ms / 1000).toFixed(1).padStart(4)} s, ` +
        `${(copy.ms / again.ms).toFixed(2)}x a restart of the original (${(again.ms / 1000).toFixed(1)} s)`,
    );
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    for (const path of [dir, work]) rmSync(path, { recursive: true, force: true });
  }
}
