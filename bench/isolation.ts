/**
 * `npm run bench -- isolation`: what one heavy caller costs everybody else (§15.5). A real server process over HTTP
 * with the default model and a generated corpus of 1,000 documents. For each heavy request kind the limits allow, a
 * second client pings every 10 ms while the request runs: the worst and p99 ping latency, as ratios to idle ping in
 * the same run (target: worst under 50 ms). Then one attacker loops the heaviest kind while a well-behaved client
 * retrieves: its share of OK answers (target ≥ 90%) and its rate against the same client alone. The heavy requests
 * are sent from a worker thread with their bodies serialised beforehand: a client's own JSON work over megabytes
 * would otherwise delay its pings and be counted against the server. The pinging client is a victim on an address of
 * its own (127.0.0.2: Linux routes all of 127.0.0.0/8 to loopback), so no per-caller bound counts it with the heavy
 * one. A flood follows: one caller on 16 connections adding 20-document chunked batches, while the victim pings and
 * retrieves; its p99 against its idle p99 in the same run (target: under 10×). `RCP_ISOLATION_KINDS=a,b` runs only the
 * heavy kinds whose names contain one of those words (`flood` the flood, `batches` the lifecycle batch floods,
 * `pipelined` one caller pipelining pings on 250 connections). Each flood line also says how late the victim's own
 * 10 ms timer fired (p99), idle and flooded: the victim shares the machine's cores with the server and the attacker's
 * client, and whatever it waits for a core is in every latency it measures;
 * `RCP_ISOLATION_REPEAT=4` runs each heavy kind four times in a row.
 */
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { Worker } from 'node:worker_threads';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const WORDS = (
  'cell protein gene tumor immune receptor signal pathway blood heart brain neuron virus bacteria enzyme membrane ' +
  'insulin glucose liver kidney lung muscle bone skin therapy trial patient dose risk cohort mutation expression'
).split(' ');
export const word = (i: number) => WORDS[(i * 7919 + (i >> 3)) % WORDS.length]!;
export const sentence = (seed: number, n: number) => Array.from({ length: n }, (_, i) => word(seed * 31 + i)).join(' ');

export interface Server {
  origin: string;
  stop(): Promise<void>;
}

/**
 * A server process; with `keys`, `readyz` is polled with `monitorKey`. `RCP_BENCH_NODE_ARGS` (space-separated) go to
 * its node, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where its threads spend the run.
 */
export async function start(env: NodeJS.ProcessEnv = {}, monitorKey?: string): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'rcp-isolation-'));
  const nodeArgs = (process.env.RCP_BENCH_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '');
  const child = spawn(
    process.execPath,
    [...nodeArgs, 'bin/rcp-server.js', 'serve', '--http', '127.0.0.1:0', '--data', dir],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, RCP_LOG_LEVEL: 'info', ...env },
    },
  );
  let log = '';
  const origin = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      const match = /"address":"(http:\/\/[^"]+)"/.exec(log);
      if (match?.[1] !== undefined) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${log}`)));
  });
  const headers: Record<string, string> = monitorKey === undefined ? {} : { authorization: `Bearer ${monitorKey}` };
  while ((await fetch(`${origin}/readyz`, { headers })).status !== 200) await new Promise((r) => setTimeout(r, 100));
  return {
    origin,
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

let nextId = 0;
export async function call(
  origin: string,
  method: string,
  params: object,
  key?: string,
): Promise<{ ok: boolean; code?: number }> {
  const response = await fetch(`${origin}/rcp/${method}`, {
    method: 'POST',
    headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method, params }),
  });
  const reply = (await response.json()) as { error?: { code: number } };
  return reply.error === undefined ? { ok: true } : { ok: false, code: reply.error.code };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
};

/** The victim: one kept-alive connection from 127.0.0.2, a caller of its own. */
const victimAgent = new Agent({ keepAlive: true, maxSockets: 1, localAddress: '127.0.0.2' });

/** A victim call: its latency in ms, and the error code when it was refused or failed (absent: answered). */
interface VictimAnswer {
  readonly ms: number;
  readonly code?: number;
}

/** One call from the victim's address; an error answer (a -32011 refusal above all) is told apart from a result. */
function victimCall(origin: string, method: string, params: object): Promise<VictimAnswer> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method, params });
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(`${origin}/rcp/${method}`, { method: 'POST', agent: victimAgent }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.once('end', () => {
        const ms = performance.now() - started;
        const error = /"error":\{"code":(-?\d+)/.exec(Buffer.concat(chunks).toString());
        resolve(error === null ? { ms } : { ms, code: Number(error[1]) });
      });
    });
    req.once('error', reject);
    req.end(body);
  });
}

/**
 * Victim calls: the latencies of the answered ones, and the refused or failed ones counted by code apart from them,
 * so a server that sheds the victim does not pass for one that serves it fast.
 */
class VictimLog {
  readonly answered: number[] = [];
  readonly refused = new Map<number, number>();
  /**
   * How late the victim's own 10 ms timer fired between calls: its own process waiting for a core. On a machine
   * whose cores the server and the attacker's client share with it, this is part of every latency it measures.
   */
  readonly late: number[] = [];

  /** The 10 ms between calls, recording how late the timer fired. */
  async pause(): Promise<void> {
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 10));
    this.late.push(performance.now() - started - 10);
  }

  add(answer: VictimAnswer): void {
    if (answer.code === undefined) this.answered.push(answer.ms);
    else this.refused.set(answer.code, (this.refused.get(answer.code) ?? 0) + 1);
  }

  /** ' (3 refused: -32011 ×3)' or ''. */
  get refusals(): string {
    if (this.refused.size === 0) return '';
    const total = [...this.refused.values()].reduce((a, b) => a + b, 0);
    const codes = [...this.refused].map(([code, count]) => `${code} ×${count}`).join(', ');
    return ` (${total} not answered: ${codes})`;
  }
}

/** Victim calls of `method` every 10 ms until `work` settles (at least one). */
async function victimDuring(
  origin: string,
  work: Promise<unknown>,
  method = 'ping',
  params: object = {},
): Promise<VictimLog> {
  let done = false;
  void work.finally(() => (done = true));
  const log = new VictimLog();
  do {
    log.add(await victimCall(origin, method, params));
    await log.pause();
  } while (!done);
  return log;
}

/** `count` victim calls back to back, 10 ms apart: the idle figures of the same run. */
async function victimIdle(origin: string, count: number, method = 'ping', params: object = {}): Promise<VictimLog> {
  const log = new VictimLog();
  for (let i = 0; i < count; i++) {
    log.add(await victimCall(origin, method, params));
    await log.pause();
  }
  return log;
}

interface Heavy {
  readonly rpc: string;
  readonly params: object;
  /** Sent as a batch of this many requests of `rpc` to `/rcp`, not one to `/rcp/<rpc>`. */
  readonly batch?: number;
  /** Written this many at a time, pipelined on each connection in one write (raw sockets), again once all answered. */
  readonly pipelined?: number;
}

function heavyKinds(): Record<string, Heavy> {
  const long = 'x'.repeat(15_000_000);
  const texts = Array.from({ length: 256 }, (_, i) => `${i} ${sentence(i, 8000)}`.slice(0, 60_000));
  const unknown = Array.from({ length: 3000 }, (_, i) => `zq${i.toString(36)}xv`)
    .join(' ')
    .slice(0, 16_000);
  const passages = Array.from({ length: 256 }, (_, i) => sentence(i, 600));
  const query = sentence(1, 12);
  return {
    'retrieve dense k200 candidateK1000 mmr': {
      rpc: 'retrieve',
      params: { query, k: 200, candidateK: 1000, mode: 'dense', mmr: { lambda: 0.5 } },
    },
    'retrieve hybrid k200 tokenBudget': { rpc: 'retrieve', params: { query, k: 200, tokenBudget: 100_000 } },
    'retrieve colbert topN 1000 candidateK 1000': {
      rpc: 'retrieve',
      params: { query, k: 10, candidateK: 1000, rerank: { method: 'colbert', topN: 1000 } },
    },
    'embed one 15 MB text': { rpc: 'embed', params: { inputs: [long] } },
    'embed 256 × 60 KB': { rpc: 'embed', params: { inputs: texts } },
    'embed/sparse 64 × 60 KB': { rpc: 'embed/sparse', params: { inputs: texts.slice(0, 64) } },
    'index/add 15 × 1 MB': {
      rpc: 'index/add',
      params: {
        documents: Array.from({ length: 15 }, (_, i) => ({
          id: `big${i}`,
          text: sentence(i, 140_000).slice(0, 1_000_000),
        })),
      },
    },
    'index/add chunk 1 MB (deadline 5 s)': {
      rpc: 'index/add',
      params: { documents: [{ id: 'long', text: 'a '.repeat(500_000) }], chunk: true, _meta: { deadlineMs: 5000 } },
    },
    'index/add chunk 1 MiB, 4,096 chunks (default deadline)': {
      rpc: 'index/add',
      params: { documents: [{ id: 'long4k', text: 'a '.repeat(524_288) }], chunk: true },
    },
    'query/transform rewrite 3,000 unknown words': {
      rpc: 'query/transform',
      params: { query: unknown, method: 'rewrite' },
    },
    'retrieve rewrite 3,000 unknown words': { rpc: 'retrieve', params: { query: unknown, k: 10, rewrite: 'rewrite' } },
    'rerank colbert 256 × 4 KB': { rpc: 'rerank', params: { query, passages, method: 'colbert' } },
  };
}

/**
 * A client in its own thread: sends `body` to `url` on `connections` connections at once until `until` (once if 0),
 * each body with `__N__` replaced by a fresh number; answers its last result and how many were OK of how many (a
 * batch by its first answer).
 */
const SENDER = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  const { url, body, until, connections } = workerData;
  let result;
  let sent = 0;
  let ok = 0;
  const codes = {};
  const loop = async () => {
    do {
      const n = sent++;
      const text = await (await fetch(url, { method: 'POST', body: body.replaceAll('__N__', String(n)) })).text();
      const error = /^\\[?\\{"jsonrpc":"2\\.0","id":[^,]*,"error":\\{"code":(-?\\d+)/.exec(text);
      result = error === null ? { ok: true } : { ok: false, code: Number(error[1]) };
      if (error === null) ok++;
      else codes[error[1]] = (codes[error[1]] ?? 0) + 1;
    } while (performance.now() + performance.timeOrigin < until);
  };
  await Promise.all(Array.from({ length: connections }, loop));
  parentPort.postMessage({ ...result, sent, okCount: ok, codes });
})();
`;

/**
 * A client in its own thread that pipelines: on each of `connections` raw connections it writes `requests` (whole
 * HTTP requests, concatenated) in one write, counts the answers (a status line each) and writes again once all came,
 * until `until`; answers how many were written and answered. Error codes are not read: these are pings.
 */
const PIPELINER = `
const { parentPort, workerData } = require('node:worker_threads');
const { connect } = require('node:net');
(async () => {
  const { host, port, requests, count, until, connections } = workerData;
  let sent = 0;
  let ok = 0;
  const loop = () => new Promise((resolve) => {
    const socket = connect(port, host);
    let answered = 0;
    let tail = '';
    const write = () => { sent += count; answered = 0; socket.write(requests); };
    socket.once('connect', write);
    socket.on('data', (chunk) => {
      const text = tail + chunk.toString('latin1');
      answered += text.split('HTTP/1.1 ').length - 1;
      tail = text.slice(-8);
      if (answered < count) return;
      ok += count;
      if (performance.now() + performance.timeOrigin < until) write();
      else socket.end();
    });
    socket.once('error', () => {});
    socket.once('close', resolve);
  });
  await Promise.all(Array.from({ length: connections }, loop));
  parentPort.postMessage({ ok: true, sent, okCount: ok, codes: {} });
})();
`;

interface Sent {
  ok: boolean;
  code?: number;
  sent: number;
  okCount: number;
  /** Answers that were errors, by code. */
  codes: Record<string, number>;
}

/** `heavy` sent from another thread, its body serialised here before it starts; `until` (epoch ms) loops it. */
function run(origin: string, heavy: Heavy, until = 0, connections = 1): Promise<Sent> {
  const member = () => ({ jsonrpc: '2.0', id: ++nextId, method: heavy.rpc, params: heavy.params });
  const body = JSON.stringify(heavy.batch === undefined ? member() : Array.from({ length: heavy.batch }, member));
  const url = heavy.batch === undefined ? `${origin}/rcp/${heavy.rpc}` : `${origin}/rcp`;
  const worker =
    heavy.pipelined === undefined
      ? new Worker(SENDER, { eval: true, workerData: { url, body, until, connections } })
      : new Worker(PIPELINER, { eval: true, workerData: pipelining(url, body, heavy.pipelined, until, connections) });
  return new Promise((resolve, reject) => {
    worker.once('message', (result: Sent) => void worker.terminate().then(() => resolve(result)));
    worker.once('error', reject);
  });
}

/** What the pipelining client needs: `count` copies of the request to `url` with `body`, as one string. */
function pipelining(url: string, body: string, count: number, until: number, connections: number) {
  const { hostname: host, port, pathname } = new URL(url);
  const one =
    `POST ${pathname} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  return { host, port: Number(port), requests: one.repeat(count), count, until, connections };
}

/** Which parts to run: `RCP_ISOLATION_KINDS` (comma-separated words a name must contain), else all. */
function wanted(name: string): boolean {
  const words = (process.env.RCP_ISOLATION_KINDS ?? '').split(',').filter((word) => word !== '');
  return words.length === 0 || words.some((word) => name.includes(word));
}

/**
 * How many times each heavy kind runs (`RCP_ISOLATION_REPEAT`, default 1): a stall seen once in four runs of
 * `embed 256 × 60 KB` (a ping held 1.1 s) is not caught by one.
 */
function repeats(): number {
  const count = Number(process.env.RCP_ISOLATION_REPEAT ?? 1);
  return Number.isInteger(count) && count > 0 ? count : 1;
}

const ms = (value: number) => `${value.toFixed(1).padStart(7)} ms`;

/**
 * One caller floods 16 connections with 20-document chunked index/add batches for `seconds` while the victim pings,
 * then retrieves: each against its own idle figures, measured just before in the same run.
 */
async function flood(origin: string, seconds: number): Promise<void> {
  const documents = Array.from({ length: 20 }, (_, i) => ({
    id: `flood__N__-${i}`,
    text: `__N__ ${sentence(i + 7, 300)}`,
  }));
  const heavy = { rpc: 'index/add', params: { documents, chunk: true } };
  await floodBy(origin, seconds, heavy, 16, '16 connections of one caller, 20-document chunked index/add');
}

/**
 * One caller on 250 connections, each pipelining 1,000 pings in one write (64 KB reaches the server per read):
 * what parsing them costs everybody else.
 */
async function pipelineFlood(origin: string, seconds: number): Promise<void> {
  const heavy = { rpc: 'ping', params: {}, pipelined: 1000 };
  await floodBy(origin, seconds, heavy, 250, '250 connections of one caller, 1,000 pings pipelined on each');
}

/**
 * One caller on 64 connections posting batches of 128 lifecycle requests (and of an unknown method), which answer
 * at once and carry no work of their own: what many of them together cost the victim.
 */
async function batchFloods(origin: string, seconds: number): Promise<void> {
  for (const method of ['ping', 'info', 'initialize', 'no/such-method']) {
    const params =
      method === 'initialize' ? { protocolVersion: 1, client: { name: 'bench', version: '1' }, capabilities: {} } : {};
    const heavy = { rpc: method, params, batch: 128 };
    await floodBy(origin, seconds, heavy, 64, `64 connections of one caller, batches of 128 ${method}`);
  }
}

async function floodBy(origin: string, seconds: number, heavy: Heavy, connections: number, label: string) {
  const query = { query: sentence(3, 8), k: 10 };
  const idlePing = await victimIdle(origin, 200);
  const idleRetrieve = await victimIdle(origin, 100, 'retrieve', query);
  for (const [what, method, params, idle] of [
    ['ping', 'ping', {}, idlePing],
    ['retrieve k10', 'retrieve', query, idleRetrieve],
  ] as const) {
    const attack = run(origin, heavy, performance.timeOrigin + performance.now() + seconds * 1000, connections);
    const during = await victimDuring(origin, attack, method, params);
    const sent = await attack;
    const idleP99 = percentile(idle.answered, 0.99);
    const p99 = percentile(during.answered, 0.99);
    const errors = Object.entries(sent.codes)
      .map(([code, count]) => `${code} ×${count}`)
      .join(', ');
    console.log(
      `  flood: ${label}, ${seconds} s ` +
        `(${sent.okCount}/${sent.sent} OK${errors === '' ? '' : `; ${errors}`}); victim ${what}: ` +
        `idle worst ${ms(Math.max(...idle.answered))} p99 ${ms(idleP99)}${idle.refusals}; ` +
        `flooded worst ${ms(Math.max(...during.answered))} p99 ${ms(p99)} (${(p99 / idleP99).toFixed(1)}× idle p99; ` +
        `${during.answered.length} answered${during.refusals}); the victim's own timer late p99 ` +
        `${percentile(during.late, 0.99).toFixed(1)} ms (idle ${percentile(idle.late, 0.99).toFixed(1)} ms)`,
    );
  }
}

export async function benchIsolation(): Promise<void> {
  const server = await start();
  const { origin } = server;
  try {
    for (let batch = 0; batch < 4; batch++) {
      const documents = Array.from({ length: 250 }, (_, i) => ({
        id: `d${batch * 250 + i}`,
        text: sentence(batch * 250 + i, 60),
      }));
      await call(origin, 'index/add', { documents });
    }
    const idle = (await victimIdle(origin, 200)).answered;
    const idleP99 = percentile(idle, 0.99);
    console.log(
      `\nisolation: 1,000 generated documents; victim (127.0.0.2) idle ping p50 ${percentile(idle, 0.5).toFixed(2)} ms, ` +
        `p99 ${idleP99.toFixed(2)} ms, worst ${Math.max(...idle).toFixed(2)} ms`,
    );
    console.log('  heavy request kind                                     answer     ping worst   p99    (× idle p99)');
    const kinds = heavyKinds();
    let heaviest = { name: '', ms: 0 };
    const runs = Object.entries(kinds).filter(([name]) => wanted(name));
    for (const [name, heavy] of Array.from({ length: repeats() }, () => runs).flat()) {
      const started = performance.now();
      const work = run(origin, heavy);
      const log = await victimDuring(origin, work);
      const pings = log.answered;
      const answer = await work;
      const took = performance.now() - started;
      if (took > heaviest.ms && answer.ok) heaviest = { name, ms: took };
      const worst = Math.max(...pings);
      const p99 = percentile(pings, 0.99);
      console.log(
        `  ${name.padEnd(54)} ${(answer.ok ? 'ok' : String(answer.code)).padEnd(7)} ${took.toFixed(0).padStart(6)} ms ` +
          `${worst.toFixed(1).padStart(7)} ms ${p99.toFixed(1).padStart(6)} ms  (${(p99 / idleP99).toFixed(1)}×)${log.refusals}`,
      );
    }
    // The 15 × 1 MB documents added above would make every retrieve below carry megabytes of text.
    await call(origin, 'index/delete', { ids: Array.from({ length: 15 }, (_, i) => `big${i}`) });
    if (wanted('flood')) await flood(origin, 15);
    if (wanted('batches')) await batchFloods(origin, 10);
    if (wanted('pipelined')) await pipelineFlood(origin, 10);
    if (heaviest.name === '' || !wanted('polite')) return;
    const SECONDS = 20;
    const polite = async (until: number) => {
      let ok = 0;
      let total = 0;
      while (performance.now() < until) {
        total++;
        if ((await call(origin, 'retrieve', { query: sentence(total, 8), k: 10 })).ok) ok++;
      }
      return { ok, total };
    };
    const alone = await polite(performance.now() + SECONDS * 1000);
    const until = performance.now() + SECONDS * 1000;
    const attack = run(origin, kinds[heaviest.name]!, performance.timeOrigin + until);
    const shared = await polite(until);
    await attack;
    console.log(
      `  a polite client retrieving beside one attacker looping '${heaviest.name}' for ${SECONDS} s: ` +
        `${((100 * shared.ok) / shared.total).toFixed(1)}% OK (${shared.ok}/${shared.total}); ` +
        `rate ${(shared.ok / alone.ok).toFixed(2)} of the same client alone (${(alone.ok / SECONDS).toFixed(1)}/s)`,
    );
  } finally {
    await server.stop();
  }
}
