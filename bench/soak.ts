/**
 * Soak under overload: a real server process over HTTP on a SciFact corpus, driven by mixed traffic —
 * 60% retrieve (hybrid), 30% embed (4 texts), 10% index/add (one document) — from many keep-alive connections, each a
 * well-behaved client that honours `retryAfterMs` (§12.2) and otherwise sends its next request at once.
 *
 * Baseline, in the same run: the same mix from CAPACITY_CLIENTS (8) connections, enough to keep both cores busy without
 * queueing much. The soak then runs RCP_SOAK_CLIENTS connections (default 256, well above capacity) for RCP_SOAK_SECONDS (default 60)
 * and reports:
 *   - goodput held: answered-ok per second under overload / the baseline's (1.0 = overload costs nothing);
 *   - the share of -32011 answers, and any other error (there should be none);
 *   - p50/p99 latency of the answered-ok requests, each as a ratio to the baseline's;
 *   - the server's RSS every 5 s, and last/first (flat = ~1.0).
 * The client runs on the same machine as the server: on 2 cores it takes CPU from it, so absolute rates are low.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'node:http';
import { scifactPath } from './scifact.js';

const DOCUMENTS = 1000;
const CAPACITY_CLIENTS = 8;
const SOAK_CLIENTS = Number(process.env.RCP_SOAK_CLIENTS ?? 256);
const BASELINE_SECONDS = 15;
const SOAK_SECONDS = Number(process.env.RCP_SOAK_SECONDS ?? 60);

interface Outcome {
  ok: number;
  refused: number;
  other: Map<string, number>;
  latencies: number[];
}

const lines = (name: string) => readFileSync(scifactPath(name), 'utf8').split('\n').filter(Boolean);

async function startServer(dir: string): Promise<{ port: number; pid: number; stop: () => Promise<void> }> {
  const port = 19_000 + Math.floor(Math.random() * 1000);
  const child = spawn(process.execPath, ['bin/rcp-server.js', 'serve', '--http', `127.0.0.1:${port}`, '--data', dir], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, RCP_LOG_LEVEL: 'info' },
  });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes('corpus ready')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${log}`)));
  });
  return {
    port,
    pid: child.pid ?? 0,
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

async function drive(port: number, clients: number, seconds: number, queries: string[], docs: string[]) {
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const outcome: Outcome = { ok: 0, refused: 0, other: new Map(), latencies: [] };
  const until = performance.now() + seconds * 1000;
  let id = 0;
  const post = (method: string, body: string) =>
    new Promise<string>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: `/rcp/${method}`,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json' },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => resolve(text));
        },
      );
      req.once('error', reject);
      req.end(body);
    });
  const call = async (method: string, params: object) => {
    const started = performance.now();
    const text = await post(method, JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }));
    const reply = JSON.parse(text) as { error?: { code: number; data?: { retryAfterMs?: number } } };
    const ms = performance.now() - started;
    if (reply.error === undefined) {
      outcome.ok++;
      outcome.latencies.push(ms);
      return 0;
    }
    if (reply.error.code === -32011) {
      outcome.refused++;
      return reply.error.data?.retryAfterMs ?? 100;
    }
    outcome.other.set(String(reply.error.code), (outcome.other.get(String(reply.error.code)) ?? 0) + 1);
    return 0;
  };
  const client = async (n: number) => {
    for (let i = n; performance.now() < until; i += clients) {
      const roll = (i * 7919) % 10;
      const text = (k: number) => queries[(i + k) % queries.length] ?? '';
      const wait =
        roll < 6
          ? await call('retrieve', { query: text(0), k: 10 })
          : roll < 9
            ? await call('embed', { inputs: [text(0), text(1), text(2), text(3)] })
            : await call('index/add', { documents: [{ id: `soak-${i % 500}`, text: docs[i % docs.length] ?? '' }] });
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(wait, until - performance.now())));
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, n) => client(n)));
  agent.destroy();
  return outcome;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
};

export async function benchSoak(): Promise<void> {
  const corpus = lines('corpus.jsonl')
    .slice(0, DOCUMENTS)
    .map((line) => JSON.parse(line) as { _id: string; title: string; text: string });
  const queries = lines('queries.jsonl').map((line) => (JSON.parse(line) as { text: string }).text);
  const dir = mkdtempSync(join(tmpdir(), 'rcp-soak-'));
  const source = join(dir, 'source.jsonl');
  writeFileSync(source, corpus.map((d) => JSON.stringify(d)).join('\n'));
  const ingest = spawn(process.execPath, ['bin/rcp-server.js', 'ingest', '--data', join(dir, 'data'), source], {
    stdio: 'inherit',
  });
  await new Promise((resolve) => ingest.once('exit', resolve));
  if (readdirSync(join(dir, 'data')).length === 0) throw new Error('ingest produced nothing');

  const server = await startServer(join(dir, 'data'));
  const docs = corpus.map((d) => d.text);
  try {
    console.log(
      `\nsoak: ${DOCUMENTS} SciFact documents, mix 60% retrieve / 30% embed×4 / 10% index/add, HTTP keep-alive`,
    );
    const baseline = await drive(server.port, CAPACITY_CLIENTS, BASELINE_SECONDS, queries, docs);
    const baseRate = baseline.ok / BASELINE_SECONDS;
    console.log(
      `  baseline (${CAPACITY_CLIENTS} clients, ${BASELINE_SECONDS} s): ${baseRate.toFixed(1)} ok/s = 1.000, ` +
        `p50 ${percentile(baseline.latencies, 0.5).toFixed(0)} ms, p99 ${percentile(baseline.latencies, 0.99).toFixed(0)} ms, ` +
        `-32011 ${baseline.refused}`,
    );
    const rss: number[] = [rssBytes(server.pid)];
    const sampler = setInterval(() => rss.push(rssBytes(server.pid)), 5000);
    const soak = await drive(server.port, SOAK_CLIENTS, SOAK_SECONDS, queries, docs);
    clearInterval(sampler);
    rss.push(rssBytes(server.pid));
    const answered = soak.ok + soak.refused + [...soak.other.values()].reduce((a, b) => a + b, 0);
    const p50 = percentile(soak.latencies, 0.5);
    const p99 = percentile(soak.latencies, 0.99);
    console.log(
      `  soak (${SOAK_CLIENTS} clients, ${SOAK_SECONDS} s): ${(soak.ok / SOAK_SECONDS).toFixed(1)} ok/s = ` +
        `${(soak.ok / SOAK_SECONDS / baseRate).toFixed(3)} of baseline; -32011 share ${((soak.refused / answered) * 100).toFixed(1)}% ` +
        `of ${answered}; other errors ${JSON.stringify(Object.fromEntries(soak.other))}`,
    );
    console.log(
      `  latency of answered-ok: p50 ${p50.toFixed(0)} ms (${(p50 / percentile(baseline.latencies, 0.5)).toFixed(2)}× baseline), ` +
        `p99 ${p99.toFixed(0)} ms (${(p99 / percentile(baseline.latencies, 0.99)).toFixed(2)}× baseline)`,
    );
    const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
    console.log(
      `  RSS every 5 s (MiB): ${rss.map(mb).join(' ')}; last/first ${((rss.at(-1) ?? 0) / (rss[0] ?? 1)).toFixed(3)}, ` +
        `max/first ${(Math.max(...rss) / (rss[0] ?? 1)).toFixed(3)}`,
    );
  } finally {
    await server.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await benchSoak();
