/**
 * Many processes over one data dir (docs/architecture.md §5), as ratios to baselines measured in the same run:
 *
 * 1. A new process ready beside another that serves a dir of RCP_BENCH_CHUNKS (default 100,000) chunks, against the
 *    same process started alone on that dir (both load the saved dense index and rebuild the lexical one).
 * 2. Write-to-visible lag: index/add through one HTTP server, then how long until another serving the same dir serves
 *    the document (polled every 2 ms), against the write's own round trip.
 */
import { rmSync } from 'node:fs';
import { startHttpProcess, type ServerProcess } from '../test/helpers/processes.js';
import { call } from './client.js';
import { syntheticDir } from './corpus.js';
import { benchEncoder } from './settings.js';

const CHUNKS = Number(process.env.RCP_BENCH_CHUNKS ?? 100_000);
const SAMPLES = 40;

/** A result of a call through the bench client (client.ts: one kept-alive connection per server). */
const result = async (origin: string, method: string, params: object) =>
  (await call(origin, method, params)) as Record<string, unknown>;

/** Spawned, listening and ready (GET /readyz 200): the milliseconds it took, and the server. */
async function timedStart(dir: string): Promise<{ ms: number; server: ServerProcess }> {
  const started = performance.now();
  // A 100k-chunk dense index takes minutes to build on two cores: readiness is waited for up to half an hour.
  const server = await startHttpProcess(
    ['serve', '--http', '127.0.0.1:0', '--data', dir],
    {},
    {
      readyWithinMs: 1_800_000,
    },
  );
  return { ms: performance.now() - started, server };
}

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

const line = (label: string, samples: number[], baseline: number) => {
  samples.sort((a, b) => a - b);
  const p50 = percentile(samples, 0.5);
  const p99 = percentile(samples, 0.99);
  console.log(
    `  ${label.padEnd(34)} p50 ${p50.toFixed(1).padStart(7)} ms  p99 ${p99.toFixed(1).padStart(7)} ms  ratio ${(p50 / baseline).toFixed(3)}`,
  );
  return p50;
};

async function lag(writer: string, reader: string): Promise<void> {
  const writes: number[] = [];
  const visible: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const word = `lagword${i}x${Date.now()}`;
    const sent = performance.now();
    await result(writer, 'index/add', { documents: [{ id: `lag-${i}`, text: `${word} measured` }] });
    const acknowledged = performance.now();
    writes.push(acknowledged - sent);
    for (;;) {
      const found = await result(reader, 'retrieve', { query: word, k: 1, mode: 'sparse' });
      if ((found.hits as unknown[]).length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    visible.push(performance.now() - acknowledged);
  }
  console.log(
    `write-to-visible lag in another process of the dir, ${SAMPLES} writes (ratio to the write's round trip)`,
  );
  const baseline = line("index/add round trip (the writer's)", writes, 1);
  line('acknowledged -> served by the other', visible, baseline);
}

export async function benchProcesses(): Promise<void> {
  const encoder = await benchEncoder();
  const dir = await syntheticDir(encoder, CHUNKS);
  await encoder.close();
  const servers: ServerProcess[] = [];
  try {
    const rebuilt = await timedStart(dir); // no saved index yet: it builds and, stopped, saves one
    await rebuilt.server.stop();
    const alone = await timedStart(dir);
    servers.push(alone.server);
    const beside = await timedStart(dir);
    servers.push(beside.server);
    console.log(`a process ready on a dir of ${CHUNKS} chunks (ratio to one started alone on it, same run)`);
    console.log(`  first start (dense index rebuilt)  ${(rebuilt.ms / 1000).toFixed(1).padStart(6)} s`);
    console.log(`  alone (saved index loaded)         ${(alone.ms / 1000).toFixed(1).padStart(6)} s  ratio 1.000`);
    console.log(
      `  beside a process serving the dir   ${(beside.ms / 1000).toFixed(1).padStart(6)} s  ratio ${(beside.ms / alone.ms).toFixed(3)}`,
    );
    await lag(alone.server.origin, beside.server.origin);
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}
