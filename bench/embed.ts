/**
 * Embed throughput, all figures as ratios to a baseline measured in the same run:
 *
 * 1. Server overhead at batch 32: texts/s through the full server (a real child process over stdio, and over HTTP)
 *    versus calling the ONNX session directly on the same texts, tokenised and packed ahead of time (the strictest
 *    baseline: the server also tokenises, queues, encodes JSON/base64 and moves bytes). Target: ≥ 0.80.
 * 2. Batching gain: 16 concurrent clients each embedding one text at a time, with the batching queue on versus
 *    off (maxWaitMs 0, one item per model call).
 * 3. No batching tax: a lone client embedding one text at a time with the default batching (maxWaitMs 2, adaptive:
 *    an idle queue runs at once) versus maxWaitMs 0. Target: ≥ 0.95.
 * RCP_BENCH_EMBED=batching runs 2 and 3 only; RCP_BENCH_EMBED=lone, 3 only.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import * as ort from 'onnxruntime-node';
import { denseFeeds, sparseFeeds } from '../src/models/onnx/use-lite-feeds.js';
import { createApp } from '../src/app.js';
import { intraOpThreads } from '../src/models/models.js';
import { modelSessionOptions } from '../src/models/onnx/model-host.js';
import { loadConfig, type ConfigOverrides } from '../src/config/index.js';
import { SentencePieceTokenizer, type Vocabulary } from '../src/models/tokenizers/sentencepiece.js';
import { scifactPath } from './scifact.js';

const MODEL_DIR = new URL('../models/use-lite/', import.meta.url);
/** Servers started here keep their (empty) corpus out of the repository's indexes/. */
const scratch = () => mkdtempSync(join(tmpdir(), 'rcp-bench-'));
const BATCH = 32;
const BATCHES = 12;
const CLIENTS = 16;
const SINGLE_REQUESTS = 640;

/** SciFact abstracts: realistic scientific text, most of it past the 128-token limit. */
function corpus(count: number): string[] {
  const lines = readFileSync(scifactPath('corpus.jsonl'), 'utf8').split('\n');
  return lines
    .filter(Boolean)
    .slice(0, count)
    .map((line) => {
      const doc = JSON.parse(line) as { title: string; text: string };
      return `${doc.title} ${doc.text}`;
    });
}

async function rawSession(texts: string[]): Promise<number> {
  // The server's session settings (model-host.ts), so the ratio is the server's overhead and nothing else.
  const session = await ort.InferenceSession.create(
    new URL('model.onnx', MODEL_DIR).pathname,
    modelSessionOptions(intraOpThreads(0)),
  );
  const vocabulary = JSON.parse(readFileSync(new URL('vocab.json', MODEL_DIR), 'utf8')) as Vocabulary;
  const tokenizer = new SentencePieceTokenizer(vocabulary, { reserved: 6, unknownId: 0 });
  const sparse = session.inputNames.includes('indices');
  const feeds = [];
  for (let b = 0; b < BATCHES; b++) {
    const ids = texts.slice(b * BATCH, (b + 1) * BATCH).map((text) => tokenizer.encode(text).slice(0, 128));
    feeds.push(sparse ? sparseFeeds(ids) : denseFeeds(ids));
  }
  await session.run(feeds[0]!); // warm-up
  const started = performance.now();
  for (const feed of feeds) await session.run(feed, ['embeddings']);
  const rate = (BATCHES * BATCH) / ((performance.now() - started) / 1000);
  await session.release();
  return rate;
}

const initialize = { protocolVersion: 1, client: { name: 'bench', version: '1' }, capabilities: {} };

async function stdioServer(texts: string[], encoding: string): Promise<number> {
  const child = spawn(process.execPath, ['bin/rcp-server.js', 'serve', '--stdio'], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, RCP_LOG_LEVEL: 'warn', RCP_DATA_DIR: scratch() },
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let id = 0;
  const call = async (method: string, params: object) => {
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params })}\n`);
    const reply = JSON.parse((await lines.next()).value as string) as { error?: unknown };
    if (reply.error !== undefined) throw new Error(JSON.stringify(reply.error));
  };
  await call('initialize', initialize);
  await call('embed', { inputs: texts.slice(0, BATCH), encoding }); // warm-up (and waits for the model to load)
  const started = performance.now();
  for (let b = 0; b < BATCHES; b++) await call('embed', { inputs: texts.slice(b * BATCH, (b + 1) * BATCH), encoding });
  const rate = (BATCHES * BATCH) / ((performance.now() - started) / 1000);
  child.stdin.end();
  return rate;
}

async function httpServer(texts: string[], encoding: string): Promise<number> {
  const port = 18_000 + Math.floor(Math.random() * 1000);
  const child = spawn(process.execPath, ['bin/rcp-server.js', 'serve', '--http', `127.0.0.1:${port}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, RCP_LOG_LEVEL: 'info', RCP_DATA_DIR: scratch() },
  });
  await new Promise<void>((resolve) =>
    child.stderr.on('data', (chunk: Buffer) => chunk.includes('listening') && resolve()),
  );
  const call = async (method: string, params: object) => {
    const response = await fetch(`http://127.0.0.1:${port}/rcp/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const reply = (await response.json()) as { error?: unknown };
    if (reply.error !== undefined) throw new Error(JSON.stringify(reply.error));
  };
  await call('embed', { inputs: texts.slice(0, BATCH), encoding });
  const started = performance.now();
  for (let b = 0; b < BATCHES; b++) await call('embed', { inputs: texts.slice(b * BATCH, (b + 1) * BATCH), encoding });
  const rate = (BATCHES * BATCH) / ((performance.now() - started) / 1000);
  child.kill('SIGTERM');
  return rate;
}

/** `clients` in-process sessions (16 unless said), each a closed loop of single-text embeds. */
async function concurrentSingles(texts: string[], batching: ConfigOverrides, clients = CLIENTS): Promise<number> {
  const app = createApp(loadConfig({ overrides: { 'log.level': 'silent', dataDir: scratch(), ...batching } }));
  await app.models.loaded;
  const sessions = Array.from({ length: clients }, () => app.createSession());
  await Promise.all(sessions.map((s) => s.handle({ jsonrpc: '2.0', id: 0, method: 'initialize', params: initialize })));
  let next = 0;
  const loop = async (session: (typeof sessions)[number]) => {
    while (next < SINGLE_REQUESTS) {
      const i = next++;
      const reply = (await session.handle({
        jsonrpc: '2.0',
        id: i + 1,
        method: 'embed',
        params: { inputs: [texts[i % texts.length]] },
      })) as {
        error?: unknown;
      };
      if (reply.error !== undefined) throw new Error(JSON.stringify(reply.error));
    }
  };
  await loop(sessions[0]!).then(() => (next = 0)); // warm-up pass through one client
  next = 0;
  const started = performance.now();
  await Promise.all(sessions.map(loop));
  const rate = SINGLE_REQUESTS / ((performance.now() - started) / 1000);
  await app.close();
  return rate;
}

export async function benchEmbed(): Promise<void> {
  if (process.env.RCP_BENCH_EMBED !== 'batching' && process.env.RCP_BENCH_EMBED !== 'lone') await serverOverhead();
  await batching();
}

async function serverOverhead(): Promise<void> {
  const texts = corpus(BATCH * BATCHES);
  const raw = await rawSession(texts);
  const rows: [string, number][] = [
    ['raw ONNX session', raw],
    ['stdio, f32-base64', await stdioServer(texts, 'f32-base64')],
    ['stdio, json', await stdioServer(texts, 'json')],
    ['http, f32-base64', await httpServer(texts, 'f32-base64')],
    ['http, json', await httpServer(texts, 'json')],
  ];
  console.log(
    `embed throughput at batch ${BATCH}, SciFact abstracts (ratio to the raw session, same run; target ≥ 0.80)`,
  );
  for (const [name, rate] of rows) {
    console.log(`  ${name.padEnd(20)} ${rate.toFixed(1).padStart(8)} texts/s   ratio ${(rate / raw).toFixed(3)}`);
  }
}

/** Each configuration `ROUNDS` times, interleaved (the machine drifts); medians. */
const ROUNDS = Number(process.env.RCP_BENCH_EMBED_ROUNDS ?? 3);

async function batching(): Promise<void> {
  const short = corpus(SINGLE_REQUESTS).map((text) => text.split(' ').slice(0, 24).join(' '));
  const configurations: [string, ConfigOverrides, number][] = [
    ['batching off', { 'models.batching.maxWaitMs': 0, 'models.batching.maxBatchItems': 1 }, CLIENTS],
    ['batching on', {}, CLIENTS],
    ['lone, maxWaitMs 0', { 'models.batching.maxWaitMs': 0 }, 1],
    ['lone, default', {}, 1],
  ];
  // RCP_BENCH_EMBED=lone: the lone-client pair only (a minute, not five).
  if (process.env.RCP_BENCH_EMBED === 'lone') configurations.splice(0, 2);
  const rates = configurations.map((): number[] => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [, overrides, clients]] of configurations.entries()) {
      rates[i]!.push(await concurrentSingles(short, overrides, clients));
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const medians = rates.map(median);
  const [loneZero, lone] = medians.slice(-2) as [number, number];
  if (medians.length === 4) {
    const [off, on] = medians as [number, number];
    console.log(
      `batching: ${CLIENTS} concurrent clients, one ~24-word text per request (ratio to batching off, same run; ` +
        `median of ${ROUNDS} interleaved rounds)`,
    );
    console.log(`  batching off         ${off.toFixed(1).padStart(8)} texts/s   ratio 1.000`);
    console.log(`  batching on          ${on.toFixed(1).padStart(8)} texts/s   ratio ${(on / off).toFixed(3)}`);
  }
  console.log(
    'no batching tax: one client, one ~24-word text per request (ratio to maxWaitMs 0, same run; target ≥ 0.95)',
  );
  console.log(`  maxWaitMs 0          ${loneZero.toFixed(1).padStart(8)} texts/s   ratio 1.000`);
  console.log(`  default (adaptive)   ${lone.toFixed(1).padStart(8)} texts/s   ratio ${(lone / loneZero).toFixed(3)}`);
}
