/**
 * Federation, every figure against a baseline measured in the same run:
 *
 * 1. Quality: BEIR SciFact split into 3 shards by the gateway's own shard function, one engine per shard (stdio)
 *    behind `rcp-server gateway`; nDCG@10 over the training judgements for each federated fusion (rrf, weighted,
 *    convex, shards) against the single index served by one engine. Default hybrid retrieve, k 10, 8 clients.
 * 2. Gateway overhead: retrieve through a gateway over one engine vs that engine directly (latency, throughput).
 * 3. Throughput through the gateway with 1, 2 and 3 engines (shards).
 *
 * Data: ingested here (about 90 s) unless RCP_BENCH_FEDERATION_DIR names a folder holding `single/` and `shard-0..2/`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shardOf } from '../src/gateway/federation.js';
import { startHttpProcess, type ServerProcess } from '../test/helpers/processes.js';
import { corpus, ndcg, trainQueries } from './scifact.js';

const CLIENTS = 8;
const SHARDS = 3;

async function ingest(dir: string, documents: { id: string; text: string }[]): Promise<void> {
  const source = join(dir, 'source.jsonl');
  writeFileSync(source, documents.map((doc) => JSON.stringify({ _id: doc.id, text: doc.text })).join('\n'));
  const child = spawn(process.execPath, ['bin/rcp-server.js', 'ingest', '--data', join(dir, 'data'), source], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await new Promise((resolve) => child.once('exit', resolve));
}

async function prepare(): Promise<string> {
  const given = process.env.RCP_BENCH_FEDERATION_DIR;
  if (given !== undefined && existsSync(join(given, 'single', 'data'))) return given;
  const root = given ?? mkdtempSync(join(tmpdir(), 'rcp-bench-federation-'));
  const docs = corpus();
  for (const [name, subset] of [
    ['single', docs],
    ...Array.from(
      { length: SHARDS },
      (_, s) => [`shard-${s}`, docs.filter((doc) => shardOf(doc.id, SHARDS) === s)] as const,
    ),
  ] as const) {
    mkdirSync(join(root, name), { recursive: true });
    await ingest(join(root, name), [...subset]);
  }
  return root;
}

const engineCommand = (dir: string) => ['node', 'bin/rcp-server.js', 'serve', '--stdio', '--data', dir];

async function gateway(root: string, shards: number[], fusion: string): Promise<ServerProcess> {
  const registry = join(mkdtempSync(join(tmpdir(), 'rcp-registry-')), 'rcp.json');
  const engines = shards.map((s) => ({
    id: `shard-${s}`,
    transport: 'stdio',
    command: engineCommand(join(root, `shard-${s}`, 'data')),
  }));
  writeFileSync(registry, JSON.stringify({ engines }));
  return startHttpProcess(['gateway', '--registry', registry, '--http', '127.0.0.1:0'], {
    RCP_LOG_LEVEL: 'info',
    RCP_FEDERATION_FUSION_METHOD: fusion,
  });
}

let nextId = 0;
async function retrieve(origin: string, query: string): Promise<string[]> {
  const response = await fetch(`${origin}/rcp/retrieve`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method: 'retrieve', params: { query, k: 10 } }),
  });
  const frame = (await response.json()) as { result?: { hits: { id: string }[] }; error?: unknown };
  if (frame.result === undefined) throw new Error(JSON.stringify(frame.error));
  return frame.result.hits.map((hit) => String(hit.id).replace(/#\d+$/, ''));
}

/** Runs every query with CLIENTS in flight: nDCG@10, queries per second, p50 latency. */
async function measure(origin: string, queries: ReturnType<typeof trainQueries>) {
  const scores: number[] = new Array<number>(queries.length);
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < queries.length) {
        const i = next++;
        const query = queries[i]!;
        const t = performance.now();
        scores[i] = ndcg(await retrieve(origin, query.text), query.relevant);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    ndcg: scores.reduce((a, b) => a + b, 0) / scores.length,
    qps: queries.length / seconds,
    p50: latencies[Math.floor(latencies.length / 2)] ?? 0,
  };
}

export async function benchFederation(): Promise<void> {
  const root = await prepare();
  const queries = trainQueries();
  const line = (
    label: string,
    m: { ndcg: number; qps: number; p50: number },
    base: { ndcg: number; qps: number; p50: number },
  ) =>
    console.log(
      `  ${label.padEnd(34)} nDCG@10 ${m.ndcg.toFixed(4)} (${(m.ndcg - base.ndcg >= 0 ? '+' : '') + (m.ndcg - base.ndcg).toFixed(4)})  ` +
        `${m.qps.toFixed(1).padStart(6)} q/s (${(m.qps / base.qps).toFixed(3)})  p50 ${m.p50.toFixed(1)} ms (${(m.p50 / base.p50).toFixed(2)}×)`,
    );

  const single = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', join(root, 'single', 'data')], {});
  await retrieve(single.origin, 'warm up');
  const base = await measure(single.origin, queries);
  console.log(`\nfederation on SciFact (${queries.length} training queries, hybrid, k 10, ${CLIENTS} clients)`);
  line('single index, engine direct', base, base);

  // Overhead: a gateway over that same engine.
  const registry = join(mkdtempSync(join(tmpdir(), 'rcp-registry-')), 'rcp.json');
  writeFileSync(
    registry,
    JSON.stringify({ engines: [{ id: 'single', transport: 'http', url: `${single.origin}/rcp` }] }),
  );
  const over = await startHttpProcess(['gateway', '--registry', registry, '--http', '127.0.0.1:0'], {});
  await retrieve(over.origin, 'warm up');
  line('single index through a gateway', await measure(over.origin, queries), base);
  await over.stop();
  await single.stop();

  for (const fusion of ['rrf', 'weighted', 'convex', 'shards']) {
    const gw = await gateway(root, [0, 1, 2], fusion);
    await retrieve(gw.origin, 'warm up');
    line(`3 shards, gateway fusion ${fusion}`, await measure(gw.origin, queries), base);
    await gw.stop();
  }
  console.log('\nthroughput through the gateway by engine count (rrf; 1 and 2 engines serve part of the corpus)');
  for (const count of [1, 2, 3]) {
    const gw = await gateway(
      root,
      Array.from({ length: count }, (_, s) => s),
      'rrf',
    );
    await retrieve(gw.origin, 'warm up');
    line(`${count} engine${count > 1 ? 's' : ''}`, await measure(gw.origin, queries), base);
    await gw.stop();
  }
}
