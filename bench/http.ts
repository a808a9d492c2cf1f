/**
 * `npm run bench -- http`: the HTTP transport under load (autocannon), every figure a ratio to its peer measured in
 * the same run.
 *
 * - The protocol floor: `POST /rcp/ping` at 8 connections against a bare Fastify route in a process of the same kind
 *   (node, one JSON body in, one JSON-RPC answer out) — target ≥ 0.8×.
 * - Fair under concurrency: sparse and hybrid `retrieve` over 1,000 SciFact abstracts at 8 and 64 connections: p50/p99
 *   of the requests served, -32011 refusals, other errors and client timeouts, and p99(64)/p99(8) — target ≤ 3×, no
 *   timeouts (overload is answered -32011 at once, not queued).
 *
 * The server is the real one (`bin/rcp-server.js serve` from dist/, default model, default log level); the corpus is
 * ingested once into a temporary data folder with `rcp-server ingest` (RCP_BENCH_HTTP_DATA names a folder to reuse
 * between runs). SciFact comes from `--scifact DIR` or RCP_SCIFACT, else ../shared/data/scifact. RCP_BENCH_SECONDS
 * sets each run's length (default 5); RCP_BENCH_HTTP_ROUNDS the ping rounds (default 5, the median reported);
 * RCP_BENCH_HTTP_PARTS=ping (or retrieve) runs one part; RCP_BENCH_HTTP_MODES the retrieve modes (default
 * sparse,hybrid).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { queryTexts, scifactPath } from './scifact.js';

const require = createRequire(import.meta.url);

/** The part of autocannon's API used here (it ships no types). */
interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (request: AutocannonRequest, context: object) => AutocannonRequest;
  onResponse?: (status: number, body: string, context: object) => void;
}
interface AutocannonResult {
  requests: { total: number; average: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  duration: number;
}
interface AutocannonInstance extends PromiseLike<AutocannonResult> {
  on(event: 'response', listener: (client: unknown, status: number, bytes: number, ms: number) => void): void;
}
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  timeout: number;
  requests: AutocannonRequest[];
}) => AutocannonInstance;
const autocannon = require('autocannon') as Autocannon;

const SECONDS = Number(process.env.RCP_BENCH_SECONDS ?? 5);
/** Rounds of the ping comparison (RCP_BENCH_HTTP_ROUNDS). */
const PING_ROUNDS = Number(process.env.RCP_BENCH_HTTP_ROUNDS ?? 5);
/** The retrieve modes loaded at 8 and 64 connections (RCP_BENCH_HTTP_MODES, comma-separated). */
const MODES = (process.env.RCP_BENCH_HTTP_MODES ?? 'sparse,hybrid').split(',');
const DOCS = 1000;
const CLIENT_TIMEOUT_S = 10;
const RATE_LIMITED = -32011;

interface Child {
  origin: string;
  stop(): Promise<void>;
}

export function waitForOrigin(child: ChildProcess, pattern: RegExp, stream: 'stdout' | 'stderr'): Promise<string> {
  let text = '';
  return new Promise<string>((resolve, reject) => {
    child[stream]!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = pattern.exec(text);
      if (match?.[1] !== undefined) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${text}`)));
  });
}

export function stopper(child: ChildProcess): () => Promise<void> {
  return async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
}

/** The real server over `data`, at the default log level; ready once `/readyz` says so. */
export async function startServer(data: string): Promise<Child> {
  const args = ['bin/rcp-server.js', 'serve', '--http', '127.0.0.1:0', '--data', data];
  const cpuProf = process.env.RCP_BENCH_CPU_PROF;
  if (cpuProf !== undefined) args.unshift('--cpu-prof', `--cpu-prof-dir=${cpuProf}`);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env } });
  // The listening line is at info, the default level.
  const origin = await waitForOrigin(child, /"address":"(http:\/\/[^"]+)"/, 'stderr');
  while ((await fetch(`${origin}/readyz`)).status !== 200) await new Promise((r) => setTimeout(r, 100));
  return { origin, stop: stopper(child) };
}

/** The peer: a bare Fastify route in a node process of its own, answering a JSON-RPC ping from its parsed body. */
const BARE_FASTIFY = `
import Fastify from 'fastify';
const app = Fastify();
app.post('/rcp/ping', async (request) => {
  const { id, params } = request.body;
  return { jsonrpc: '2.0', id, result: params?.nonce === undefined ? {} : { nonce: params.nonce } };
});
const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write('listening ' + address + '\\n');
`;

async function startBareFastify(): Promise<Child> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', BARE_FASTIFY], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const origin = await waitForOrigin(child, /listening (http:\/\/\S+)/, 'stdout');
  return { origin, stop: stopper(child) };
}

/**
 * The first `count` SciFact abstracts ingested into `dir` with `rcp-server ingest` (a folder already holding them for
 * this model is reused).
 */
export function ingest(dir: string, count: number): void {
  const marker = join(dir, '.bench-ingested');
  const model = `${count}\n${readFileSync('models/use-lite/manifest.json', 'utf8')}`;
  if (existsSync(marker) && readFileSync(marker, 'utf8') === model) return;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const lines = readFileSync(scifactPath('corpus.jsonl'), 'utf8').split('\n').filter(Boolean).slice(0, count);
  const file = join(mkdtempSync(join(tmpdir(), 'rcp-bench-http-docs-')), 'corpus.jsonl');
  writeFileSync(file, `${lines.join('\n')}\n`);
  const started = performance.now();
  const run = spawnSync(process.execPath, ['bin/rcp-server.js', 'ingest', '--data', dir, file], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, RCP_LOG_LEVEL: 'warn' },
  });
  rmSync(file, { force: true });
  if (run.status !== 0) throw new Error(`rcp-server ingest exited ${run.status}`);
  writeFileSync(marker, model);
  console.log(`  ingested ${lines.length} SciFact abstracts in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

export interface Load {
  rate: number;
  p50: number;
  p99: number;
  ok: number;
  refused: number;
  otherErrors: number;
  timeouts: number;
  /** Slowest -32011 answer, ms: a refusal must come at once. */
  refusedMax: number;
}

export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

/**
 * `connections` clients posting `frame(i)` to `path` for `seconds` (SECONDS unless given). Latencies are of the
 * answers that served the request (JSON-RPC result); -32011 answers are counted (and their own latency kept) apart.
 */
export async function load(
  origin: string,
  path: string,
  connections: number,
  frame: (i: number) => object,
  seconds = SECONDS,
): Promise<Load> {
  let next = 0;
  let last: 'ok' | 'refused' | 'error' = 'error';
  const served: number[] = [];
  const refusedMs: number[] = [];
  let otherErrors = 0;
  const instance = autocannon({
    url: origin,
    connections,
    duration: seconds,
    timeout: CLIENT_TIMEOUT_S,
    requests: [
      {
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json' },
        // Ids unique among requests in flight (§4.7).
        setupRequest: (request) => ({
          ...request,
          body: JSON.stringify({ jsonrpc: '2.0', id: ++next, ...frame(next) }),
        }),
        onResponse: (status, body) => {
          let code: number | undefined;
          try {
            code = (JSON.parse(body) as { error?: { code: number } }).error?.code;
          } catch {
            code = Number.NaN;
          }
          last = status === 200 && code === undefined ? 'ok' : code === RATE_LIMITED ? 'refused' : 'error';
        },
      },
    ],
  });
  // autocannon reports a response's body (onResponse above) and then, synchronously, its latency.
  instance.on('response', (_client, _status, _bytes, ms) => {
    if (last === 'ok') served.push(ms);
    else if (last === 'refused') refusedMs.push(ms);
    else otherErrors++;
    last = 'error';
  });
  const result = await instance;
  served.sort((a, b) => a - b);
  return {
    rate: served.length / result.duration,
    p50: percentile(served, 0.5),
    p99: percentile(served, 0.99),
    ok: served.length,
    refused: refusedMs.length,
    otherErrors,
    timeouts: result.timeouts,
    refusedMax: refusedMs.length === 0 ? 0 : Math.max(...refusedMs),
  };
}

const ping = (i: number) => ({ method: 'ping', params: { nonce: i } });

function row(name: string, l: Load, ratio: string): string {
  return (
    `  ${name.padEnd(26)} ${l.rate.toFixed(0).padStart(7)} /s  p50 ${l.p50.toFixed(0).padStart(5)} ms  ` +
    `p99 ${l.p99.toFixed(0).padStart(5)} ms  -32011 ${String(l.refused).padStart(5)} (max ${l.refusedMax.toFixed(0)} ms)  ` +
    `errors ${l.otherErrors}  timeouts ${l.timeouts}   ${ratio}`
  );
}

export async function benchHttp(): Promise<void> {
  const reuse = process.env.RCP_BENCH_HTTP_DATA;
  const data = reuse ?? mkdtempSync(join(tmpdir(), 'rcp-bench-http-'));
  const queries = queryTexts();
  const retrieve = (mode: string) => (i: number) => ({
    method: 'retrieve',
    params: { query: queries[i % queries.length], k: 10, mode },
  });
  // RCP_BENCH_HTTP_PARTS=ping or =retrieve runs one part.
  const parts = new Set((process.env.RCP_BENCH_HTTP_PARTS ?? 'ping,retrieve').split(','));
  console.log(`\nhttp: autocannon, ${SECONDS} s per run, same run for every ratio`);
  ingest(data, DOCS);
  const bare = await startBareFastify();
  let server: Child | undefined;
  try {
    server = await startServer(data);
    if (parts.has('ping')) {
      // Warm both (JIT, connections), then measure the peers back to back, round after round: this machine's speed
      // drifts by half between minutes, so each round's ratio is its own, and the median round is reported.
      await load(bare.origin, '/rcp/ping', 8, ping);
      await load(server.origin, '/rcp/ping', 8, ping);
      const rounds: { bareRun: Load; pingRun: Load; ratio: number }[] = [];
      for (let round = 0; round < PING_ROUNDS; round++) {
        const bareRun = await load(bare.origin, '/rcp/ping', 8, ping);
        const pingRun = await load(server.origin, '/rcp/ping', 8, ping);
        rounds.push({ bareRun, pingRun, ratio: pingRun.rate / bareRun.rate });
      }
      console.log(`  ratios by round: ${rounds.map((r) => r.ratio.toFixed(3)).join(' ')}`);
      const { bareRun, pingRun, ratio } = rounds.sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)]!;
      console.log(row('bare Fastify ping, 8 conn', bareRun, 'ratio 1.000'));
      console.log(row('rcp ping, 8 conn', pingRun, `ratio ${ratio.toFixed(3)} of bare Fastify (median round)`));
    }
    for (const mode of parts.has('retrieve') ? MODES : []) {
      await load(server.origin, '/rcp/retrieve', 8, retrieve(mode));
      const at8 = await load(server.origin, '/rcp/retrieve', 8, retrieve(mode));
      const at64 = await load(server.origin, '/rcp/retrieve', 64, retrieve(mode));
      const p99 = (at64.p99 / Math.max(1, at8.p99)).toFixed(2);
      console.log(row(`${mode} retrieve, 8 conn`, at8, 'ratio 1.000'));
      console.log(
        row(`${mode} retrieve, 64 conn`, at64, `rate ${(at64.rate / at8.rate).toFixed(3)}, p99 ${p99}× of 8 conn`),
      );
    }
  } finally {
    await server?.stop();
    await bare.stop();
    if (reuse === undefined) rmSync(data, { recursive: true, force: true });
  }
}
