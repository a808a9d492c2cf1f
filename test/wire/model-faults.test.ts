import { readFileSync, rmSync, unlinkSync, writeFileSync, mkdtempSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import type { Session } from '../../src/protocol/session.js';
import { writeFixture } from '../fixtures/bert-models.js';
import { track } from '../helpers/children.js';
import { error } from '../helpers/frames.js';
import { connect, INITIALIZE, request, ROOT, testConfig, TRANSPORTS, type Frame } from '../helpers/wire.js';

/**
 * Model faults, each by breaking a model file on purpose: the server stays up, keeps advertising the capability
 * (§13.2), answers -32010 with retryable and retryAfterMs (§12.2), reports not ready, and logs why.
 */
const MODELS = mkdtempSync(join(tmpdir(), 'rcp-faults-'));
afterAll(() => rmSync(MODELS, { recursive: true, force: true }));

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

function fixture(name: string, options: Parameters<typeof writeFixture>[1] = { kind: 'encoder' }): string {
  writeFixture(join(MODELS, name), options);
  return name;
}

/** Flips bytes in the middle of model.onnx: its sha256 no longer matches the manifest. */
const corrupt = fixture('corrupt');
{
  const path = join(MODELS, corrupt, 'model.onnx');
  const bytes = readFileSync(path);
  bytes.fill(0xff, bytes.length >> 1, (bytes.length >> 1) + 64);
  writeFileSync(path, bytes);
}
/** A file the runtime cannot parse, re-hashed into the manifest so only the load itself fails. */
const garbage = fixture('garbage');
{
  writeFileSync(join(MODELS, garbage, 'model.onnx'), 'this is not an ONNX model');
  const manifestPath = join(MODELS, garbage, 'manifest.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { sha256: Record<string, string> };
  manifest.sha256['model.onnx'] = sha256(join(MODELS, garbage, 'model.onnx'));
  writeFileSync(manifestPath, JSON.stringify(manifest));
}
const missing = fixture('missing');
unlinkSync(join(MODELS, missing, 'model.onnx'));
/** A position table of 8 rows behind a manifest promising 64 tokens: long inputs fail inside the run. */
const shortPositions = fixture('short-positions', { kind: 'encoder', positions: 8, maxTokens: 64 });
const brokenReranker = fixture('broken-reranker', { kind: 'cross-encoder' });
writeFileSync(join(MODELS, brokenReranker, 'model.onnx'), 'not a model either');

function expectBackendUnavailable(frame: Frame | Frame[]): void {
  expect(error(frame).code).toBe(-32010);
  expect(error(frame).data).toMatchObject({ retryable: true });
  expect(error(frame).data.retryAfterMs).toBeGreaterThan(0);
}

describe.each(TRANSPORTS)('a model file broken on purpose, over %s', (transport) => {
  it('§13.2 keeps embed advertised, answers ping, and fails embed with -32010 {retryable, retryAfterMs}', async () => {
    const client = await connect(transport, { config: { 'models.dir': MODELS, 'models.encoder': corrupt } });
    const init = (await client.exchange(INITIALIZE())) as {
      result: { capabilities: { embed?: { dimension: number } } };
    };
    expect(init.result.capabilities.embed?.dimension).toBe(32);
    expectBackendUnavailable(await client.exchange(request(1, 'embed', { inputs: ['the cell'] })));
    expect(await client.exchange(request(2, 'ping'))).toMatchObject({ result: {} });
    await client.close();
  });

  it('fails one run with -32010 and serves the next request', async () => {
    const client = await connect(transport, { config: { 'models.dir': MODELS, 'models.encoder': shortPositions } });
    await client.exchange(INITIALIZE());
    const long = await client.exchange(request(1, 'embed', { inputs: ['the cell '.repeat(10)] }));
    expectBackendUnavailable(long);
    expect(error(long).data.detail).toMatch(/failed to run/);
    const short = (await client.exchange(request(2, 'embed', { inputs: ['the cell'] }))) as Frame;
    expect((short.result as { vectors: number[][] }).vectors[0]).toHaveLength(32);
    await client.close();
  });
});

/** An app built directly, with a logger we can read, serving HTTP on a real socket for /readyz. */
async function serve(
  models: Record<string, unknown>,
): Promise<{ app: App; origin: string; log: () => string; session: Session }> {
  let text = '';
  const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => ((text += chunk.toString()), done()) });
  const app = createApp(testConfig({ 'models.dir': MODELS, ...models }), { logger: pino({ level: 'info' }, sink) });
  const origin = await (await app.buildHttp()).listen({ host: '127.0.0.1', port: 0 });
  await app.models.loaded;
  await app.corpus?.ready;
  const session = app.createSession();
  await session.handle(INITIALIZE(), () => undefined);
  return { app, origin, log: () => text, session };
}

let nextId = 0;
async function call(session: Session, method: string, params: object): Promise<Frame> {
  return (await session.handle(request(++nextId, method, params), () => undefined)) as unknown as Frame;
}

describe('load failures: readiness and logs say why', () => {
  it.each([
    ['a corrupted file (sha256 mismatch)', corrupt, /sha256/],
    ['a file the runtime cannot load', garbage, /protobuf|parse|load|model/i],
    ['a missing file', missing, /ENOENT|no such file/],
  ])('%s: -32010, GET /readyz 503 with the reason, an error log line', async (_name, encoder, reason) => {
    const { app, origin, log, session } = await serve({ 'models.encoder': encoder });
    expectBackendUnavailable(await call(session, 'embed', { inputs: ['x'] }));
    const ready = await fetch(`${origin}/readyz`);
    expect(ready.status).toBe(503);
    const body = (await ready.json()) as { status: string; models: { encoder: { ready: boolean; reason: string } } };
    expect(body.status).toBe('not ready');
    expect(body.models.encoder.reason).toMatch(reason);
    expect(log()).toMatch(/model failed to load/);
    expect((await fetch(`${origin}/healthz`)).status).toBe(200);
    await app.close();
  });

  it('a broken reranker: rerank -32010 while embed keeps working', async () => {
    const { app, session } = await serve({ 'models.encoder': shortPositions, 'models.reranker': brokenReranker });
    expectBackendUnavailable(await call(session, 'rerank', { query: 'q', passages: ['a'] }));
    expect((await call(session, 'embed', { inputs: ['the cell'] })).result).toBeDefined();
    await app.close();
  });

  it('healthy models: GET /readyz 200 once loaded', async () => {
    const { app, origin } = await serve({ 'models.encoder': shortPositions });
    const ready = await fetch(`${origin}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', models: { encoder: { ready: true } } });
    await app.close();
  });
});

describe('configuration mistakes stop start-up with clear text (docs/architecture.md §6: not wire codes)', () => {
  it('an encoder directory without a readable manifest: exit 2, the path named on stderr', async () => {
    const child = track(
      spawn(process.execPath, ['bin/rcp-server.js', 'serve', '--stdio'], {
        cwd: ROOT,
        env: { ...process.env, RCP_ENCODER: join(MODELS, 'no-such-model') },
      }),
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect(code).toBe(2);
    expect(stderr).toMatch(/cannot read model manifest .*no-such-model/);
  });

  it.each([
    [
      'a data dir that is a file',
      ['--data', join(MODELS, 'a-file')],
      /^rcp-server: data dir .*a-file cannot be used: .*a-file is not a directory$/,
    ],
    [
      'a data dir under a file',
      ['--data', join(MODELS, 'a-file', 'sub')],
      /^rcp-server: data dir .*sub cannot be used: .*a-file is not a directory$/,
    ],
    // Node's recursive mkdir never returns for a path under /proc.
    [
      'a data dir that cannot be created',
      ['--data', '/proc/self/rcp-data'],
      /^rcp-server: data dir \/proc\/self\/rcp-data cannot be created \(ENOENT at \/proc\/self\/rcp-data\)$/,
    ],
    [
      'a config file that is not YAML',
      ['--config', join(MODELS, 'bad.yaml')],
      /^rcp-server: config file .*bad.yaml is not valid YAML: .* at line 3, column \d+$/,
    ],
  ])('%s: exit 2 and one line saying why', async (_what, args, line) => {
    writeFileSync(join(MODELS, 'a-file'), 'not a directory');
    writeFileSync(join(MODELS, 'bad.yaml'), 'http:\n  port: [1,\n  host: x\n');
    const child = track(spawn(process.execPath, ['bin/rcp-server.js', 'serve', '--stdio', ...args], { cwd: ROOT }));
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin.end();
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect(code).toBe(2);
    // Besides the JSON log lines, exactly one line of text: the reason.
    const said = stderr.split('\n').filter((text) => text !== '' && !text.startsWith('{'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(line);
  });

  it('a cross-encoder configured as the encoder: exit 2, one line naming it, no stack trace', async () => {
    const reranker = fixture('a-reranker', { kind: 'cross-encoder' });
    const child = track(
      spawn(process.execPath, ['bin/rcp-server.js', 'serve', '--stdio'], {
        cwd: ROOT,
        env: { ...process.env, RCP_ENCODER: join(MODELS, reranker) },
      }),
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect(code).toBe(2);
    expect(stderr.trim()).toMatch(/^rcp-server: models.encoder .*a-reranker is a cross-encoder, not an encoder$/);
  });
});

describe('overload', () => {
  it('§12.2 a full model queue answers -32011 at once with retryAfterMs; admitted work completes', async () => {
    const { app, session } = await serve({
      'models.encoder': shortPositions,
      'models.embedBatchLimit': 8,
      'models.rerankMaxCandidates': 4,
      'models.batching.maxQueuedItems': 8,
      'models.batching.maxBatchItems': 64,
    });
    // The model is held: its batches wait for `release` (the queue, not the model's speed, is under test), so the
    // queue's state is known before the probe, however this process is scheduled.
    const model = app.models.encoder as unknown as { runBatch(jobs: unknown[]): Promise<unknown[]> };
    const run = model.runBatch.bind(model);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let running!: () => void;
    const started = new Promise<void>((resolve) => (running = resolve));
    model.runBatch = async (jobs) => {
      running();
      await released;
      return run(jobs);
    };
    const inputs = Array.from({ length: 8 }, (_, i) => `the cell ${i}`);
    const held = call(session, 'embed', { inputs });
    await started;
    // Eight more texts wait behind the running batch: the queue is full.
    const queued = call(session, 'embed', { inputs });
    while (app.models.queueDepths().encoder !== 8) await new Promise((resolve) => setTimeout(resolve, 5));
    // At once: refused while the work ahead of it is still held, not once the queue has drained (which it cannot
    // before the release: a probe left waiting in the queue shows as the timer's answer, not as a hang).
    const refused = await Promise.race([
      call(session, 'embed', { inputs: ['one more'] }),
      new Promise<Frame>((resolve) => setTimeout(resolve, 10_000, { waiting: 'in the queue' })),
    ]);
    expect(error(refused).code).toBe(-32011);
    expect(error(refused).data.detail).toMatch(/queue full/);
    expect(error(refused).data).toMatchObject({ retryable: true });
    expect(error(refused).data.retryAfterMs).toBeGreaterThan(0);
    expect(app.models.queueDepths().encoder).toBe(8);
    release();
    expect(((await held).result as { vectors: unknown[] }).vectors).toHaveLength(8);
    expect(((await queued).result as { vectors: unknown[] }).vectors).toHaveLength(8);
    await app.close();
  });
});
