import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClientTimeoutError,
  ConnectionClosedError,
  HttpStatusError,
  RcpError,
  UnreadableFrameError,
  connect,
  type RcpClient,
  type StreamEvent,
} from 'rcp-server/client';
import { createApp, type App } from '../../src/app.js';
import { registerTestMethods } from '../fixtures/test-methods.js';
import { ROOT, testConfig } from '../helpers/wire.js';

/**
 * The typed client (`rcp-server/client`, imported by its package name) against the real server: over a real pipe
 * (the stdio fixture, with the test methods) and a real socket (the app over HTTP). Gating before I/O, cancellation,
 * client deadlines, SSE progress as an async iterator, §12.2 retries, and the error types of failures that never
 * reached a JSON-RPC answer.
 */
const STDIO = [process.execPath, '--import', 'tsx', 'test/fixtures/serve-stdio.ts'];
const stdioEnv = (extra: Record<string, string> = {}) => ({
  ...process.env,
  RCP_ENCODER: 'none',
  RCP_LOG_LEVEL: 'warn',
  RCP_DATA_DIR: `${ROOT}/indexes/.client-test-unused`,
  ...extra,
});

let app: App;
let url: string;
beforeAll(async () => {
  app = createApp(testConfig({ 'limits.rateLimit': { reads: 0, writes: 0, models: 0 } }), {
    register: registerTestMethods,
  });
  url = `${await (await app.buildHttp()).listen({ host: '127.0.0.1', port: 0 })}/rcp`;
});
afterAll(() => app.close());

describe.each(['stdio', 'http'] as const)('the client over %s', (transport) => {
  let rcp: RcpClient;
  beforeAll(async () => {
    rcp = await connect(transport === 'http' ? { url } : { command: STDIO, cwd: ROOT, env: stdioEnv() });
  });
  afterAll(() => rcp.close());

  it('initializes and exposes what the server advertised', () => {
    expect(rcp.info.protocolVersion).toBe(1);
    expect(rcp.capabilities).toHaveProperty('x-test');
    expect(rcp.capabilities).not.toHaveProperty('retrieve');
  });

  it('answers calls, and an RcpError carries code, data, retryable() and retryAfterMs()', async () => {
    expect(await rcp.request('x-test/echo', { text: 'hi', mode: 'upper' })).toEqual({ text: 'HI' });
    expect(await rcp.ping()).toEqual({});
    const error = (await rcp.request('x-test/echo', { text: 'x', mode: 'shout' }).catch((e: unknown) => e)) as RcpError;
    expect(error).toBeInstanceOf(RcpError);
    expect(error.message).toMatch(/^option not supported/); // the answer's message, as the server sent it
    expect(error.code).toBe(-32005);
    expect(error.data).toMatchObject({ option: 'mode' });
    expect(error.retryable()).toBe(false);
    expect(error.retryAfterMs()).toBeUndefined();
  });

  it('fails a method the server did not advertise with -32003, before any I/O', async () => {
    const error = (await rcp.retrieve({ query: 'x', k: 1 }).catch((e: unknown) => e)) as RcpError;
    expect(error).toBeInstanceOf(RcpError);
    expect(error.code).toBe(-32003);
    if (transport === 'http') {
      // The server never saw it: no retrieve in its request counter.
      const metrics = await (await fetch(url.replace(/\/rcp$/, '/metrics'))).text();
      expect(metrics).toContain('rcp_requests_total{method="initialize"');
      expect(metrics).not.toContain('method="retrieve"');
    }
  });

  it('cancels with an AbortSignal (-32006, never retried) and gives up at its own deadline', async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 100);
    const cancelled = (await rcp
      .request('x-test/sleep', { ms: 5000 }, { signal: controller.signal })
      .catch((e: unknown) => e)) as RcpError;
    expect(cancelled.code).toBe(-32006);
    expect(cancelled.retryable()).toBe(false);
    expect(Date.now() - started).toBeLessThan(2000);
    const before = Date.now();
    const late = await rcp.request('x-test/sleep', { ms: 5000 }, { timeoutMs: 150 }).catch((e: unknown) => e);
    // §13.1: the deadline also travels as _meta.deadlineMs, so the server stops at it too. On a loaded machine its
    // -32014 can be read in the same poll in which the client's own timer falls due, and I/O is handled first: either
    // answer is the deadline keeping its word, and neither waits for the 5 s sleep.
    if (!(late instanceof ClientTimeoutError)) expect((late as RcpError).code).toBe(-32014);
    expect(Date.now() - before).toBeLessThan(2000);
    // The connection is fine afterwards.
    expect(await rcp.request('x-test/echo', { text: 'still here' })).toEqual({ text: 'still here' });
  });

  it('streams progress as an async iterator, then the result (§9)', async () => {
    const events: StreamEvent[] = [];
    for await (const event of rcp.stream('x-test/progress', { steps: 3 })) events.push(event);
    expect(events.filter((e) => e.type === 'progress')).toHaveLength(3);
    expect(events.at(-1)).toEqual({ type: 'result', result: { steps: 3 } });
  });
});

describe('the client against the default encoder over HTTP', () => {
  let encoderApp: App;
  let rcp: RcpClient;
  beforeAll(async () => {
    encoderApp = createApp(testConfig({ 'models.encoder': `${ROOT}/models/use-lite`, 'models.colbert': true }));
    const origin = await (await encoderApp.buildHttp()).listen({ host: '127.0.0.1', port: 0 });
    rcp = await connect({ url: `${origin}/rcp` });
  });
  afterAll(async () => {
    await rcp.close();
    await encoderApp.close();
  });

  it('§7.5 embedMulti returns a token matrix per input; §9 embed streams a progress frame per model batch', async () => {
    const { matrices, dimension } = await rcp.embedMulti({ inputs: ['owls hunt at night', 'stars'], kind: 'document' });
    expect(dimension).toBe(512);
    expect(matrices.map((matrix) => matrix.every((row) => row.length === 512))).toEqual([true, true]);
    const events: StreamEvent[] = [];
    for await (const event of rcp.stream('embed', { inputs: ['owls', 'stars'] })) events.push(event);
    expect(events.filter((event) => event.type === 'progress').length).toBeGreaterThan(0);
    expect(events.at(-1)).toMatchObject({ type: 'result' });
  });
});

describe('retries (§12.2)', () => {
  it('retries -32011 after retryAfterMs and succeeds; does not retry -32602', async () => {
    // One token every 4 s: no stall of this process refills the bucket between the calls below, and a retry that
    // did not wait for the token (backoff alone: well under a second) would run out of attempts.
    const limited = createApp(testConfig({ 'limits.rateLimit': { reads: 0.25, writes: 0, models: 0 } }), {
      register: registerTestMethods,
    });
    const where = `${await (await limited.buildHttp()).listen({ host: '127.0.0.1', port: 0 })}/rcp`;
    const rcp = await connect({ url: where });
    await rcp.request('x-test/echo', { text: 'spends the token' });
    const noRetry = await connect({ url: where, retry: false });
    const refused = (await noRetry.request('x-test/echo', { text: 'now' }).catch((e: unknown) => e)) as RcpError;
    expect(refused.code).toBe(-32011);
    expect(refused.retryable()).toBe(true);
    expect(refused.retryAfterMs()).toBeGreaterThan(0);
    const started = Date.now();
    expect(await rcp.request('x-test/echo', { text: 'waited' })).toEqual({ text: 'waited' });
    expect(Date.now() - started).toBeGreaterThan(500);
    await limited.close();
  });
});

describe('failures that never reached an answer', () => {
  it('ConnectionClosedError when the server process dies mid-request', async () => {
    // A minimal server: answers initialize, then exits on the next request without answering it.
    const script = [
      "const rl = require('node:readline').createInterface({ input: process.stdin });",
      'rl.on("line", (line) => { const m = JSON.parse(line);',
      '  if (m.method !== "initialize") process.exit(3);',
      '  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: 1,',
      '    server: { name: "dies", version: "1" }, capabilities: { retrieve: {} } } }) + "\\n"); });',
    ].join('\n');
    const rcp = await connect({ command: [process.execPath, '-e', script] });
    expect(await rcp.retrieve({ query: 'x', k: 1 }).catch((e: unknown) => e)).toBeInstanceOf(ConnectionClosedError);
    expect(await rcp.ping().catch((e: unknown) => e)).toBeInstanceOf(ConnectionClosedError);
  });

  it('HttpStatusError for an HTTP answer without JSON-RPC, UnreadableFrameError for garbage', async () => {
    expect(await connect({ url: url.replace(/\/rcp$/, '/nowhere') }).catch((e: unknown) => e)).toBeInstanceOf(
      HttpStatusError,
    );
    const garbage = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"not": "rpc"'),
    );
    await new Promise<void>((resolve) => garbage.listen(0, '127.0.0.1', resolve));
    const address = `http://127.0.0.1:${(garbage.address() as { port: number }).port}/rcp`;
    expect(await connect({ url: address }).catch((e: unknown) => e)).toBeInstanceOf(UnreadableFrameError);
    garbage.close();
    const babbler = [
      process.execPath,
      '-e',
      'process.stdout.write("this is not json\\n"); process.stdin.on("end", () => process.exit(0)).resume()',
    ];
    expect(await connect({ command: babbler }).catch((e: unknown) => e)).toBeInstanceOf(UnreadableFrameError);
  });
});
