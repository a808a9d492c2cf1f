import { mkdtempSync } from 'node:fs';
import { connect as tcp } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/children.js';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { request, type Frame } from '../helpers/wire.js';

/**
 * A burst of work past what the server serves at once (§15.5), against a real server process with the default model
 * and a small corpus: what cannot be served now is answered -32011 with a `retryAfterMs` at once — never queued for
 * seconds behind the rest — and what is admitted is served.
 */
let server: ServerProcess;

beforeAll(async () => {
  server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', mkdtempSync(join(tmpdir(), 'rcp-'))], {
    RCP_LIMITS_MAX_WORK_IN_FLIGHT: String(WORK_IN_FLIGHT),
    // The holders' seconds of model work are queued, not refused by the inference queue's own time bound.
    RCP_MODELS_BATCHING_MAX_QUEUE_WAIT_MS: '0',
    RCP_RERANK_MAX_CANDIDATES: String(RERANK_MAX_CANDIDATES),
  });
  const words = 'cell protein gene tumor immune receptor signal pathway blood heart brain neuron virus'.split(' ');
  const documents = Array.from({ length: 300 }, (_, i) => ({
    id: `d${i}`,
    text: Array.from({ length: 40 }, (_, w) => words[(i * 7 + w * 3) % words.length]).join(' '),
  }));
  const added = await post(request(1, 'index/add', { documents }));
  expect(added.frame.error).toBeUndefined();
}, 120_000);

afterAll(async () => {
  await server.stop();
});

async function post(frame: Frame): Promise<{ frame: Frame; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${server.origin}/rcp/${String(frame.method)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(frame),
  });
  const answer = (await response.json()) as Frame;
  return { frame: answer, ms: performance.now() - started };
}

/** An HTTP/1.1 request on a connection of its own, opened beforehand: `send()` writes it and times the answer. */
async function connection(frame: Frame): Promise<{ send: () => Promise<{ frame: Frame; ms: number }> }> {
  const { hostname, port } = new URL(server.origin);
  const socket = tcp({ host: hostname, port: Number(port) });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const body = JSON.stringify(frame);
  const head = `POST /rcp/${String(frame.method)} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n`;
  const text = `${head}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
  return {
    send: () =>
      new Promise((resolve, reject) => {
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.once('error', reject);
        const sent = performance.now();
        socket.once('end', () => {
          const ms = performance.now() - sent;
          const answer = Buffer.concat(chunks).toString('utf8');
          resolve({ frame: JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Frame, ms });
        });
        socket.write(text);
      }),
  };
}

/** models.rerankMaxCandidates: `rerank.maxCandidates`, below the corpus' 300 documents. */
const RERANK_MAX_CANDIDATES = 128;

/** limits.maxWorkInFlight, below its default so that the burst is quick to send. */
const WORK_IN_FLIGHT = 4;

describe('overload (§15.5)', () => {
  it('a burst beyond capacity is answered -32011 with retryAfterMs at once, not queued; the admitted are served', async () => {
    // Every place is first taken by an embed of many long texts (seconds of model work, shared round robin so that
    // none of them finishes early): whatever the machine's load, the burst then finds the places full.
    const holders = [];
    for (let i = 0; i < WORK_IN_FLIGHT; i++)
      holders.push(await connection(request(i + 100, 'embed', { texts: longTexts(i) })));
    const held = holders.map((holder) => holder.send());
    await untilFull();
    const burst = WORK_IN_FLIGHT * 8;
    const connections = [];
    for (let i = 0; i < burst; i++)
      connections.push(await connection(request(i + 10, 'retrieve', { query: 'protein' })));
    // Every request written at once: the whole burst is at the server within a few milliseconds.
    const answers = await Promise.all(connections.map((c) => c.send()));
    const holding = await Promise.all(held);
    const served = answers.filter((answer) => answer.frame.result !== undefined);
    const refused = answers.filter((answer) => (answer.frame.error as Frame | undefined)?.code === -32011);
    expect(holding.map((answer) => answer.frame.error)).toEqual(holding.map(() => undefined));
    expect(served.length + refused.length).toBe(burst);
    expect(refused.length).toBeGreaterThan(burst / 2);
    for (const { frame } of refused) {
      const data = (frame.error as { data?: { retryable?: boolean; retryAfterMs?: number } }).data;
      expect(data?.retryable).toBe(true);
      expect(data?.retryAfterMs).toBeGreaterThan(0);
    }
    // Refusals do not wait for the work admitted before them: each is out before the first holder's answer, and
    // none waits seconds (before, the burst queued and took seconds to clear).
    const ms = (list: { ms: number }[]) => list.map((answer) => answer.ms).sort((a, b) => a - b);
    expect(Math.max(...ms(refused))).toBeLessThan(3000);
    expect(Math.max(...ms(refused))).toBeLessThan(ms(holding)[0]!);
    // And the server is itself again at once: a ping, then a retrieve, are served.
    expect((await post(request(1, 'ping'))).frame.result).toEqual({});
    expect((await post(request(2, 'retrieve', { query: 'protein', k: 3 }))).frame.result).toBeDefined();
  }, 120_000);

  it('retrieve with a colbert rerank of topN 1000 reranks at most rerank.maxCandidates (§7.7 clamps topN)', async () => {
    // Before, all 300 candidates were reranked: at 1,000 that was 15-19 s of the server's CPU for one request.
    const params = { query: 'protein gene', k: 10, candidateK: 1000, rerank: { method: 'colbert', topN: 1000 } };
    const { frame } = await post(request(4, 'retrieve', params));
    const usage = (frame.result as { usage: { candidates: number; reranked: number } }).usage;
    expect(usage.candidates).toBe(300);
    expect(usage.reranked).toBe(RERANK_MAX_CANDIDATES);
  }, 120_000);
});

/** Texts of about the encoder's window each, different for each holder. */
function longTexts(holder: number): string[] {
  const words = 'cell protein gene tumor immune receptor signal pathway blood heart brain neuron virus'.split(' ');
  return Array.from({ length: 128 }, (_, i) =>
    Array.from({ length: 120 }, (_, w) => `${words[(holder * 5 + i * 7 + w * 3) % words.length]!}${w % 7}`).join(' '),
  );
}

/** Probes with a retrieve until one is refused: then every place is held (only the holders are in flight). */
async function untilFull(): Promise<void> {
  const refused = async () =>
    ((await post(request(3, 'retrieve', { query: 'protein' }))).frame.error as Frame | undefined)?.code === -32011;
  await until(refused, 'the holders filled the places', { intervalMs: 10 });
}
