/**
 * `npm run bench -- tenants`: what a named corpus costs (docs/tenants.md), over RCP_BENCH_CORPORA (default 200)
 * corpora of 20 short documents each, in one server process, each figure beside a baseline of the same run:
 *
 * 1. RSS of the server with no named corpus open (the baseline), with every corpus open (each written and read once),
 *    and after every corpus has been closed as idle: memory per open and per closed corpus.
 * 2. Retrieve latency (p50, p95) to a corpus that is open against one that was closed (it reopens from its files).
 *
 * With RCP_BENCH_TENANTS_STORE=postgres the corpora are in a PostgreSQL store of record (a cluster started here, from
 * Debian's postgresql) and the server is a replica of it: the same figures for a store's corpora.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHttpProcess, type ServerProcess } from '../test/helpers/processes.js';
import { FolderShelf, StoreShelf, type CorpusShelf } from '../src/tenants/index.js';
import { PostgresCluster } from '../test/helpers/postgres.js';
import { call } from './client.js';

const CORPORA = Number(process.env.RCP_BENCH_CORPORA ?? 200);
const DOCUMENTS = 20;
const SAMPLED = Math.min(40, CORPORA);
const WORDS = ['cell', 'protein', 'cancer', 'blood', 'gene', 'expression', 'mouse', 'risk', 'therapy', 'brain'];

const names = Array.from({ length: CORPORA }, (_, i) => `tenant-${i}`);

function rssMiB(server: ServerProcess): number {
  const status = readFileSync(`/proc/${server.child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** The store of record's url when the corpora are in PostgreSQL ('' in folders). */
let storeUrl = '';

function start(work: string, idleSeconds: number): Promise<ServerProcess> {
  const args = ['serve', '--http', '127.0.0.1:0', '--data', join(work, 'default'), '--corpora', join(work, 'root')];
  const env = {
    RCP_CORPORA_MAX_OPEN: String(CORPORA + 1),
    RCP_CORPORA_IDLE_SECONDS: String(idleSeconds),
    ...(storeUrl === '' ? {} : { RCP_STORE_URL: storeUrl, RCP_STORE_POLL_MS: '1000' }),
  };
  return startHttpProcess(args, env);
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  return performance.now() - started;
}

const quantile = (samples: number[], q: number) =>
  [...samples].sort((a, b) => a - b)[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;

/** Writes and reads every corpus once; the server's RSS with all of them open, and warm retrieve latencies. */
async function openAll(work: string): Promise<{ baseline: number; open: number; warm: number[] }> {
  const server = await start(work, 3600);
  try {
    await call(server.origin, 'ping', {});
    const baseline = rssMiB(server);
    for (const [i, name] of names.entries()) {
      const documents = Array.from({ length: DOCUMENTS }, (_, d) => ({
        id: `d${d}`,
        text: `${name} ${WORDS[(i + d) % 10]} ${WORDS[(i * 7 + d) % 10]} ${WORDS[(d * 3) % 10]} note ${d}`,
      }));
      await post(server.origin, name, 'index/add', { documents });
      await post(server.origin, name, 'retrieve', { query: WORDS[i % 10], k: 5, mode: 'hybrid' });
    }
    const open = rssMiB(server);
    const warm: number[] = [];
    for (let i = 0; i < SAMPLED; i++) {
      warm.push(
        await timed(() => post(server.origin, names[i]!, 'retrieve', { query: WORDS[i % 10], k: 5, mode: 'hybrid' })),
      );
    }
    return { baseline, open, warm };
  } finally {
    await server.stop();
  }
}

/** The server's RSS once every corpus, touched once, has been closed as idle; then cold retrieve latencies. */
async function closeAll(work: string): Promise<{ baseline: number; closed: number; cold: number[]; reopened: number }> {
  const server = await start(work, 2);
  try {
    await call(server.origin, 'ping', {});
    const baseline = rssMiB(server);
    for (const name of names) await post(server.origin, name, 'retrieve', { query: 'cell', k: 5 });
    const closes = () => (server.stderr().match(/"msg":"corpus closed"/g) ?? []).length;
    await until(() => closes() >= CORPORA);
    const closed = rssMiB(server);
    const cold: number[] = [];
    for (let i = 0; i < SAMPLED; i++) {
      cold.push(
        await timed(() => post(server.origin, names[i]!, 'retrieve', { query: WORDS[i % 10], k: 5, mode: 'hybrid' })),
      );
    }
    await until(() => closes() >= CORPORA + SAMPLED);
    return { baseline, closed, cold, reopened: rssMiB(server) };
  } finally {
    await server.stop();
  }
}

/** One call to corpus `name`'s endpoint. */
async function post(origin: string, name: string, method: string, params: object): Promise<unknown> {
  const response = await fetch(`${origin}/rcp/corpora/${name}/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const frame = (await response.json()) as { result?: unknown; error?: unknown };
  if (frame.result === undefined) throw new Error(`${name} ${method}: ${JSON.stringify(frame.error)}`);
  return frame.result;
}

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 600_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('the corpora were not all closed within 10 minutes');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function benchTenants(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'rcp-bench-tenants-'));
  // Every corpus open at once: each holds its pooled connections for a while after its last use.
  const cluster =
    process.env.RCP_BENCH_TENANTS_STORE === 'postgres'
      ? await PostgresCluster.create([`max_connections = ${3 * CORPORA + 20}`])
      : undefined;
  storeUrl = cluster?.url ?? '';
  try {
    const shelf: CorpusShelf =
      cluster === undefined ? new FolderShelf(join(work, 'root')) : new StoreShelf(storeUrl, '');
    for (const name of names) await shelf.create(name);
    await shelf.close();
    const opened = await openAll(work);
    const closed = await closeAll(work);
    const perOpen = ((opened.open - opened.baseline) / CORPORA) * 1024;
    const perClosed = ((closed.closed - closed.baseline) / CORPORA) * 1024;
    const kept = cluster === undefined ? 'in folders' : 'in a PostgreSQL store (the server a replica)';
    console.log(`tenants: ${CORPORA} corpora of ${DOCUMENTS} documents ${kept}, one process`);
    console.log(
      `  RSS: ${opened.baseline.toFixed(0)} MiB with none open; ${opened.open.toFixed(0)} MiB with all open ` +
        `(${perOpen.toFixed(0)} KiB per open corpus); ${closed.closed.toFixed(0)} MiB after all closed as idle ` +
        `against ${closed.baseline.toFixed(0)} MiB at that server's start (${perClosed.toFixed(0)} KiB per closed corpus)`,
    );
    const perReopen = ((closed.reopened - closed.closed) / SAMPLED) * 1024;
    console.log(
      `  RSS after ${SAMPLED} more opens and closes: ${closed.reopened.toFixed(0)} MiB (${perReopen.toFixed(0)} KiB ` +
        'kept per open and close: what the allocator holds after a peak is not given back, what grows per cycle is)',
    );
    const line = (label: string, samples: number[]) =>
      `  ${label}: p50 ${quantile(samples, 0.5).toFixed(1)} ms, p95 ${quantile(samples, 0.95).toFixed(1)} ms`;
    console.log(line('retrieve (hybrid, k 5) to an open corpus', opened.warm));
    console.log(line('retrieve to a closed corpus (reopened)', closed.cold));
    console.log(
      `  reopen cost: p95 ratio ${(quantile(closed.cold, 0.95) / quantile(opened.warm, 0.95)).toFixed(1)}× an open one`,
    );
  } finally {
    cluster?.destroy();
    rmSync(work, { recursive: true, force: true });
  }
}
