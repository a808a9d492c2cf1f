import { mkdtempSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect as tcp } from 'node:net';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { registerTestMethods } from '../fixtures/test-methods.js';
import { until, untilLogged } from '../helpers/children.js';
import { assertValidFrame } from '../helpers/schema.js';
import { INITIALIZE, request, spawnStdio, testConfig } from '../helpers/wire.js';

/** §5.2 HTTP transport, over a real listening socket. */
describe('§5.2 HTTP transport', () => {
  let app: App;
  let origin: string;

  const start = async (overrides: Record<string, unknown> = {}) => {
    app = createApp(testConfig({ 'http.port': 0, ...overrides }), { register: registerTestMethods });
    const server = await app.buildHttp();
    origin = await server.listen({ host: '127.0.0.1', port: 0 });
  };
  const post = async (path: string, body: string | object, headers: Record<string, string> = {}) => {
    const response = await fetch(`${origin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    const isJson = response.headers.get('content-type')?.includes('application/json') === true;
    const json = isJson && text !== '' ? (JSON.parse(text) as Record<string, unknown>) : undefined;
    // Every JSON-RPC answer (HTTP 200) must validate; 404s and the like are Fastify's plain errors.
    if (json !== undefined && response.status === 200) assertValidFrame(json);
    return { status: response.status, headers: response.headers, json, text };
  };
  /** `text` written on a connection of its own; everything the server sent until it closed the connection. */
  const rawExchange = (text: string) => {
    const { hostname, port } = new URL(origin);
    const socket = tcp({ host: hostname, port: Number(port) }, () => socket.write(text));
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    return new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  };

  afterEach(async () => app?.close());

  it('§5.2 the path method must match the body method: -32600 on mismatch, echoing the id', async () => {
    await start();
    const { status, json } = await post('/rcp/info', request(1, 'ping'));
    expect(status).toBe(200);
    expect(json).toMatchObject({ id: 1, error: { code: -32600 } });
    expect((await post('/rcp/sessions/t/index/add', request(2, 'index/add', { documents: [] }))).json).toMatchObject({
      error: { code: -32001 },
    });
  });

  it('§5.2 every JSON-RPC answer is HTTP 200, errors included; notifications are 204 with no body', async () => {
    await start();
    expect((await post('/rcp/retrieve', request(1, 'retrieve', { query: 'q' }))).status).toBe(200);
    const notification = await post('/rcp/ping', { jsonrpc: '2.0', method: 'ping' });
    expect(notification.status).toBe(204);
    expect(notification.text).toBe('');
  });

  it('§5.2 unparseable bodies are answered -32700 with id null, whatever type they are read as JSON under', async () => {
    await start();
    for (const type of ['application/json', 'text/plain', 'application/x-www-form-urlencoded']) {
      const { status, json } = await post('/rcp/ping', '{"jsonrpc":', { 'content-type': type });
      expect(status).toBe(200);
      expect(json).toMatchObject({ id: null, error: { code: -32700 } });
    }
    expect((await post('/rcp/ping', '')).json).toMatchObject({ id: null, error: { code: -32700 } });
  });

  it('§5.2 a body that is not JSON by its headers is refused unread, HTTP 415; JSON and what curl -d sends are read', async () => {
    await start();
    const frame = JSON.stringify(request(1, 'ping'));
    const refused = [
      { 'content-type': 'text/html' },
      { 'content-type': 'multipart/form-data; boundary=x' },
      { 'content-type': 'application/xml' },
      { 'content-type': 'application/json; charset=utf-16' },
      { 'content-type': 'application/json;charset=utf-8;charset=latin1' },
      { 'content-encoding': 'gzip' },
    ];
    for (const headers of refused) {
      const answer = await post('/rcp/ping', frame, headers);
      expect(answer.status, JSON.stringify(headers)).toBe(415);
      expect(answer.json).toMatchObject({ statusCode: 415, error: 'Unsupported Media Type' });
    }
    const gzipped = await fetch(`${origin}/rcp/ping`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(frame),
    });
    expect(gzipped.status).toBe(415);
    expect(gzipped.headers.get('accept-encoding')).toBe('identity');
    expect(await gzipped.json()).toMatchObject({ message: expect.stringContaining('Content-Encoding gzip') });
    const read = [
      { 'content-type': 'application/json; charset=UTF-8' },
      { 'content-type': 'application/vnd.example+json' },
      { 'content-type': 'application/x-www-form-urlencoded' },
      { 'content-type': 'text/plain;charset=UTF-8' },
      { 'content-encoding': 'identity' },
    ];
    for (const headers of read) {
      expect((await post('/rcp/ping', frame, headers)).json, JSON.stringify(headers)).toMatchObject({ result: {} });
    }
    // A transfer coding other than chunked is not undone by Node: gzip then chunked is refused, chunked alone read.
    const chunked = (codings: string) =>
      rawExchange(
        `POST /rcp/ping HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${codings}\r\nConnection: close\r\n\r\n` +
          `${frame.length.toString(16)}\r\n${frame}\r\n0\r\n\r\n`,
      );
    expect(await chunked('gzip, chunked')).toMatch(/^HTTP\/1.1 415[^]*Transfer-Encoding gzip/);
    expect(await chunked('chunked')).toMatch(/^HTTP\/1.1 200[^]*"result":\{\}/);
    // No Content-Type at all (bytes: fetch sends none).
    const untyped = await fetch(`${origin}/rcp/ping`, { method: 'POST', body: new TextEncoder().encode(frame) });
    expect(await untyped.json()).toMatchObject({ id: 1, result: {} });
  });

  it('§5.2 unknown paths are 404', async () => {
    await start();
    expect((await post('/elsewhere/ping', request(1, 'ping'))).status).toBe(404);
    expect((await fetch(`${origin}/rcp/ping`)).status).toBe(404);
  });

  it('§15.5 a body over the limit is -32013, and the server keeps serving', async () => {
    await start({ 'limits.maxBodyBytes': 4096 });
    const big = await post('/rcp/ping', request(1, 'ping', { nonce: 'x'.repeat(10_000) }));
    expect(big.status).toBe(200);
    expect(big.json).toMatchObject({ id: null, error: { code: -32013, data: { retryable: false } } });
    expect((await post('/rcp/ping', request(2, 'ping'))).json).toMatchObject({ id: 2, result: {} });
  });

  it("§5.2 §15.5 §15.6 refusals come in the order of the request's steps: key, media type, body, path, scope, rate", async () => {
    const key = 'steps-order-read-key-0123';
    // 0.01 reads a second: the first echo takes the caller's one token, and no other is back before the test ends.
    await start({
      'auth.apiKeys': [{ key, scopes: ['read'] }],
      'limits.rateLimit': { reads: 0.01, writes: 0, models: 0 },
      'limits.maxBodyBytes': 4096,
    });
    const auth = { authorization: `Bearer ${key}` };
    // From the headers: the key before what the body is; then the body, before it is parsed.
    const html = { 'content-type': 'text/html' };
    expect((await post('/rcp/ping', request(1, 'ping'), html)).json).toMatchObject({
      id: null,
      error: { code: -32012 },
    });
    expect((await post('/rcp/ping', request(1, 'ping'), { ...html, ...auth })).status).toBe(415);
    const big = await post('/rcp/ping', request(1, 'ping', { nonce: 'x'.repeat(5000) }), auth);
    expect(big.json).toMatchObject({ id: null, error: { code: -32013 } });
    // Member by member: the path's method, the key's scope, the rate limit; the served first, then the refused in order.
    const echo = (id: string) => request(id, 'x-test/echo', { text: id });
    const codes = (answers: unknown) =>
      (answers as { id: string; error?: { code: number } }[]).map(({ id, error }) => [id, error?.code ?? 0]);
    const atMethod = await post('/rcp/x-test/echo', [request('p', 'ping'), echo('a'), echo('b')], auth);
    expect(codes(atMethod.json)).toEqual([
      ['a', 0],
      ['p', -32600],
      ['b', -32011],
    ]);
    const atBase = await post('/rcp', [request('w', 'index/add', { documents: [] }), echo('c')], auth);
    expect(codes(atBase.json)).toEqual([
      ['w', -32012],
      ['c', -32011],
    ]);
  });

  it('§11 a batch may be posted to the base path; at a method path, mismatching members get -32600', async () => {
    await start();
    const atBase = await post('/rcp', [request(1, 'ping'), request(2, 'info')]);
    expect(atBase.json).toHaveLength(2);
    const atMethod = await post('/rcp/ping', [request(1, 'ping'), request(2, 'info')]);
    const members = atMethod.json as unknown as Record<string, unknown>[];
    expect(members.find((m) => m.id === 1)).toMatchObject({ result: {} });
    expect(members.find((m) => m.id === 2)).toMatchObject({ error: { code: -32600 } });
    // §11 a batch is answered with an array even when its only answer is a member refused before the session.
    const lone = await post('/rcp/ping', [request(3, 'info')]);
    expect(lone.json).toEqual([expect.objectContaining({ id: 3, error: expect.objectContaining({ code: -32600 }) })]);
    const withNotification = await post('/rcp/ping', [request(4, 'info'), { jsonrpc: '2.0', method: 'ping' }]);
    expect(withNotification.json).toEqual([expect.objectContaining({ id: 4 })]);
  });

  it('§5.2 CORS: a configured origin gets preflight and response headers; others are refused', async () => {
    await start({ 'http.corsOrigins': ['https://app.example'] });
    const preflight = await fetch(`${origin}/rcp/retrieve`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,rcp-session',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('rcp-session');
    const allowed = await post('/rcp/ping', request(1, 'ping'), { origin: 'https://app.example' });
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    // Another origin is refused before it runs (403), and reads no CORS header either.
    const other = await post('/rcp/ping', request(1, 'ping'), { origin: 'https://evil.example' });
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    // Only RCP answers are for browsers: the operator endpoints and 404s carry no CORS headers.
    for (const path of ['/healthz', '/readyz', '/elsewhere']) {
      const answer = await fetch(`${origin}${path}`, { headers: { origin: 'https://app.example' } });
      expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    }
  });

  it('§5.2 §9 SSE: progress frames echoing the token, then exactly one final frame; buffered JSON without Accept', async () => {
    await start();
    await post('/rcp/initialize', INITIALIZE(0));
    const body = request(1, 'x-test/progress', { steps: 3, _meta: { progressToken: 'p1' } });
    const streamed = await post('/rcp/x-test/progress', body, { accept: 'text/event-stream' });
    expect(streamed.headers.get('content-type')).toContain('text/event-stream');
    const events = streamed.text.split('\n\n').filter(Boolean);
    const frames = events.map((event) => {
      expect(event.startsWith('data: ')).toBe(true);
      const frame = JSON.parse(event.slice('data: '.length)) as Record<string, unknown>;
      assertValidFrame(frame);
      return frame;
    });
    expect(frames).toHaveLength(4);
    expect(frames.slice(0, 3).every((f) => f.method === 'notifications/progress')).toBe(true);
    expect(frames[3]).toMatchObject({ id: 1, result: { steps: 3 } });
    const buffered = await post('/rcp/x-test/progress', { ...body, id: 2 });
    expect(buffered.headers.get('content-type')).toContain('application/json');
    expect(buffered.json).toMatchObject({ id: 2, result: { steps: 3 } });
  });

  it('§5.2 an answer past 256 KiB (serialised off the event loop, sent as bytes) arrives whole, as JSON and as SSE', async () => {
    await start();
    await post('/rcp/initialize', INITIALIZE(0));
    const text = `${'é'.repeat(200_000)}🙂${'x'.repeat(100_000)}`;
    const plain = await post('/rcp/x-test/echo', request(1, 'x-test/echo', { text }));
    expect(plain.json).toMatchObject({ id: 1, result: { text } });
    const streamed = await post('/rcp/x-test/echo', request(2, 'x-test/echo', { text }), {
      accept: 'text/event-stream',
    });
    const events = streamed.text.split('\n\n').filter(Boolean);
    expect(JSON.parse(events.at(-1)!.slice('data: '.length))).toMatchObject({ id: 2, result: { text } });
  });

  it('§13.1 a client that hangs up cancels its request', async () => {
    await start();
    const aborter = new AbortController();
    const pending = fetch(`${origin}/rcp/x-test/sleep`, {
      method: 'POST',
      body: JSON.stringify(request('hang', 'x-test/sleep', { ms: 5_000 })),
      signal: aborter.signal,
    }).catch(() => 'aborted');
    await new Promise((resolve) => setTimeout(resolve, 100));
    aborter.abort();
    expect(await pending).toBe('aborted');
    // The id is free again at once: the abandoned request is no longer in flight.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await post('/rcp/x-test/sleep', request('hang', 'x-test/sleep', { ms: 1 }))).json).toMatchObject({
      result: { slept: 1 },
    });
  });

  it('a graceful close delivers whole an answer still waiting in the server for a slow reader', async () => {
    await start();
    // 10 MB: more than the kernel's socket buffers take from a client that does not read, so most of the answer
    // waits in the server's own buffer when the close begins.
    const text = 'x'.repeat(10_000_000);
    const body = JSON.stringify(request(1, 'x-test/echo', { text }));
    const { hostname, port } = new URL(origin);
    const socket = tcp({ host: hostname, port: Number(port) });
    socket.write(
      `POST /rcp/x-test/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    const received: Buffer[] = [];
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.pause();
    // The answer has begun to arrive: the server has written all of it (one write) and counts it as sent.
    while (socket.readableLength === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const closed = app.close();
    // Node's own idle sweep counts the connection idle from here on; give a drain every chance to cut it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    socket.resume();
    await ended;
    await closed;
    const answer = Buffer.concat(received).toString('utf8');
    const json = answer.slice(answer.indexOf('\r\n\r\n') + 4);
    expect(json.length).toBeGreaterThan(text.length);
    expect(JSON.parse(json)).toMatchObject({ id: 1, result: { text } });
  });
});

/** The line the binary logs once its HTTP listener is open; waited for as it comes (children.ts), not on a clock. */
const LISTENING = /"address":"(http:\/\/[^"]+)"/;

/** Each process is ended when the file's tests are done (children.ts), whether or not its test got to stop it. */
describe('§5.2 the real binary over HTTP', () => {
  /** `serve --http` on a free loopback port, logging at info (plus `config`): the process and its origin, once open. */
  const serveHttp = async (config: Record<string, unknown> = {}) => {
    const server = spawnStdio({ config: { 'log.level': 'info', ...config } }, [
      'bin/rcp-server.js',
      'serve',
      '--http',
      '127.0.0.1:0',
    ]);
    return { server, url: new URL((await untilLogged(server, LISTENING))[1]!) };
  };
  /** A ping whose answer carries nonce 7, as raw HTTP/1.1. */
  const rawPing = (url: URL) => {
    const body = JSON.stringify(request(1, 'ping', { nonce: 7 }));
    return `POST /rcp/ping HTTP/1.1\r\nhost: ${url.hostname}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
  };
  /** A raw connection, once open: `closed` resolves with all it received when the server closes it. */
  const rawConnection = async (url: URL) => {
    const socket = tcp({ host: url.hostname, port: Number(url.port) });
    await new Promise((resolve) => socket.once('connect', resolve));
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    socket.on('error', () => undefined);
    const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
    return { socket, closed, received: () => received };
  };
  /** How many nonce-7 pings `text` answers. */
  const pingAnswers = (text: string) => text.match(/"nonce":7/g)?.length ?? 0;

  it('serve --http [HOST:]PORT listens, answers, and exits 0 on SIGTERM', async () => {
    const { server, url } = await serveHttp();
    const response = await fetch(`${url.origin}/rcp/ping`, {
      method: 'POST',
      body: JSON.stringify(request(1, 'ping', { nonce: 3 })),
    });
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 1, result: { nonce: 3 } });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('a SIGTERM sent as soon as it logs listening drains and exits 0, not killed by the signal', async () => {
    // Five tries, each signal sent from the very callback that reads the line: before, the handler was installed
    // after the line, and 20 of 30 such signals killed the process.
    for (let attempt = 0; attempt < 5; attempt++) {
      const server = spawnStdio({ config: { 'log.level': 'info' } }, [
        'bin/rcp-server.js',
        'serve',
        '--http',
        '127.0.0.1:0',
      ]);
      const signal = () => LISTENING.test(server.stderr()) && server.child.kill('SIGTERM');
      server.child.stderr.on('data', function once() {
        if (signal()) server.child.stderr.off('data', once);
      });
      expect(await server.exited).toBe(0);
      expect(server.stderr()).toMatch(/"msg":"stopped"/);
    }
  });

  it('on SIGTERM answers every request sent before it, on new and keep-alive connections, then closes them', async () => {
    const { server, url } = await serveHttp();
    const ping = rawPing(url);
    // A keep-alive connection that has had its answer, then stopped (SIGSTOP) so the rest is ordered for certain.
    const keptAlive = await rawConnection(url);
    keptAlive.socket.write(ping);
    await until(() => pingAnswers(keptAlive.received()) === 1, 'the first answer');
    server.child.kill('SIGSTOP');
    await until(
      () => readFileSync(`/proc/${server.child.pid}/stat`, 'utf8').split(') ')[1]!.startsWith('T'),
      'stopped',
    );
    // Connections the kernel completes while the process is stopped, each with a request sent, and another request
    // on the kept-alive one: all of it is waiting for the process when the signal is.
    const fresh = await Promise.all(Array.from({ length: 4 }, () => rawConnection(url)));
    const written = [keptAlive, ...fresh].map(({ socket }) => new Promise((resolve) => socket.write(ping, resolve)));
    await Promise.all(written);
    server.child.kill('SIGTERM');
    server.child.kill('SIGCONT');
    // Each answered in full (the kept-alive one twice), then closed by the server.
    const answers = await Promise.all([keptAlive, ...fresh].map(async ({ closed }) => pingAnswers(await closed)));
    expect(answers).toEqual([2, ...fresh.map(() => 1)]);
    expect(await server.exited).toBe(0);
  });

  it('draining, answers requests pipelined behind one, ignores a second SIGTERM, and cuts a client still sending at the headers timeout', async () => {
    const { server, url } = await serveHttp({ 'http.headersTimeoutMs': 2000 });
    const ping = rawPing(url);
    const open = async (first: string) => {
      const connection = await rawConnection(url);
      await new Promise((resolve) => connection.socket.write(first, resolve));
      return connection;
    };
    // A body that never finishes (headers whole, a byte of the body), and the first bytes of a request to come.
    const sending = await open(`${ping.slice(0, ping.indexOf('\r\n\r\n') + 4)}{`);
    const pipelined = await open(ping.slice(0, 10));
    const signalled = performance.now();
    server.child.kill('SIGTERM');
    await untilLogged(server, /"msg":"shutting down"/);
    // Twenty requests in one write, behind the one begun before the signal: every one answered.
    pipelined.socket.write(ping.slice(10) + ping.repeat(19));
    expect(pingAnswers(await pipelined.closed)).toBe(20);
    // A second signal does not kill the drain (Node's default action did).
    server.child.kill('SIGTERM');
    await untilLogged(server, /"msg":"already shutting down"/);
    // The client still sending is cut at the headers timeout, not at the request deadline (30 s): the process exits.
    expect(await sending.closed).toBe('');
    expect(await server.exited).toBe(0);
    expect(performance.now() - signalled).toBeLessThan(20_000);
    expect(server.stderr()).toMatch(/"msg":"stopped"/);
  });

  it('on SIGTERM stops accepting, finishes the request in flight, saves the index and exits 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rcp-sigterm-'));
    const serve = () =>
      spawnStdio({ config: { 'log.level': 'info', 'models.encoder': 'use-lite', dataDir } }, [
        'bin/rcp-server.js',
        'serve',
        '--http',
        '127.0.0.1:0',
      ]);
    const listening = async (server: ReturnType<typeof serve>) => (await untilLogged(server, LISTENING))[1]!;
    const call = (address: string, id: number, method: string, params: object) =>
      fetch(`${address}/rcp/${method}`, { method: 'POST', body: JSON.stringify(request(id, method, params)) }).then(
        async (response) => (await response.json()) as { result?: Record<string, unknown>; error?: unknown },
      );
    const server = serve();
    const address = await listening(server);
    expect(await call(address, 1, 'initialize', { protocolVersion: 1, capabilities: {} })).toHaveProperty('result');
    expect(
      await call(address, 2, 'index/add', { documents: [{ id: 'kept', text: 'written before the signal' }] }),
    ).toHaveProperty('result');
    // A large embed is in flight when the signal arrives: it is answered in full before the process exits, and the
    // client's keep-alive connection (this test process keeps it open) does not hold the shutdown. In flight for
    // certain, however fast the embed: its headers are sent with `Expect: 100-continue`, and its body only once the
    // server has taken the request (its 100 Continue) and has logged that it is shutting down.
    const sentence = 'the heart pumps blood through arteries and veins while the lungs move oxygen into it';
    const texts = Array.from({ length: 250 }, (_, i) => `${i}: ${sentence} ${sentence} ${sentence}`);
    const body = JSON.stringify(request(3, 'embed', { inputs: texts }));
    const embed = httpRequest(`${address}/rcp/embed`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        expect: '100-continue',
      },
    });
    const inFlight = new Promise<{ result?: Record<string, unknown> }>((resolve, reject) => {
      embed.once('error', reject);
      embed.once('response', (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        response.once('end', () => resolve(JSON.parse(text) as { result?: Record<string, unknown> }));
      });
    });
    await new Promise((resolve) => embed.once('continue', resolve));
    server.child.kill('SIGTERM');
    await untilLogged(server, /"msg":"shutting down"/);
    embed.end(body);
    const answer = await inFlight;
    expect((answer.result?.vectors as unknown[] | undefined)?.length).toBe(250);
    expect(await server.exited).toBe(0);
    expect(server.stderr()).toMatch(/"msg":"stopped"/);
    // Saved on the way out: the next start opens the index without replaying the write.
    const again = serve();
    const next = await listening(again);
    await untilLogged(again, /corpus ready/);
    expect(again.stderr()).toMatch(/"denseIndex":"loaded at seq 1"/);
    expect(await call(next, 4, 'initialize', { protocolVersion: 1, capabilities: {} })).toHaveProperty('result');
    const found = await call(next, 5, 'retrieve', { query: 'written before the signal', k: 1, mode: 'sparse' });
    expect(found.result?.hits).toMatchObject([{ id: 'kept#0' }]);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  });
});
