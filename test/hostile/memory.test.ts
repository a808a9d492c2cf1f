import { mkdtempSync, readFileSync } from 'node:fs';
import { connect as tcp, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/children.js';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { readFrames, request, spawnStdio, type Frame } from '../helpers/wire.js';

/** The process's resident set, or 0 once it has exited. */
function rss(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}
const MB = 1024 * 1024;

/**
 * §15.5 memory under clients that ask for much and read nothing: answers not yet read by their clients are bounded
 * across all connections (`limits.maxUnsentBytes`; past it a large answer is -32011), and stdio stops reading a
 * client that pipelines thousands of requests. RSS stays within a bound of idle and a polite client is served.
 */
describe('clients that never read their answers (HTTP)', () => {
  let server: ServerProcess;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcp-hostile-'));
    server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir], {
      RCP_LIMITS_MAX_UNSENT_BYTES: String(16 * MB),
      RCP_LIMITS_MAX_RESPONSE_BYTES: String(32 * MB),
    });
    // 200 documents of 100 KB: a retrieve of all of them with their text answers about 20 MB.
    for (let batch = 0; batch < 4; batch++) {
      const documents = Array.from({ length: 50 }, (_, i) => ({
        id: `big-${batch}-${i}`,
        text: `${i} lorem ipsum dolor `.repeat(5000),
      }));
      const response = await fetch(`${server.origin}/rcp/index/add`, {
        method: 'POST',
        body: JSON.stringify(request(batch, 'index/add', { documents })),
      });
      expect(((await response.json()) as Frame).result).toBeDefined();
    }
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await server.stop();
  });

  it('thirty clients asking for 20 MB answers they do not read: RSS under 2× idle, others served, none lost', async () => {
    const { hostname, port } = new URL(server.origin);
    const body = (id: number) =>
      JSON.stringify(request(id, 'retrieve', { query: 'lorem ipsum', k: 200, mode: 'sparse' }));
    const idle = rss(server.child.pid!);
    let peak = idle;
    for (let i = 0; i < 30; i++) {
      const socket = tcp({ host: hostname, port: Number(port) }, () =>
        socket.write(`POST /rcp/retrieve HTTP/1.1\r\nHost: x\r\nContent-Length: ${body(i).length}\r\n\r\n${body(i)}`),
      );
      socket.on('error', () => undefined);
      socket.pause();
      sockets.push(socket);
    }
    for (let i = 0; i < 40; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      peak = Math.max(peak, rss(server.child.pid!));
    }
    const ping = await fetch(`${server.origin}/rcp/ping`, { method: 'POST', body: JSON.stringify(request(2, 'ping')) });
    expect(((await ping.json()) as Frame).result).toEqual({});
    // Thirty 20 MB answers held in full would be 600 MB beyond idle.
    expect(peak).toBeLessThan(2 * idle);
    // Reading now: the answers that did not fit were refused with -32011, not lost.
    const texts = await Promise.all(
      sockets.map(
        (socket) =>
          new Promise<string>((resolve) => {
            let text = '';
            socket.on('data', (chunk: Buffer) => {
              text += chunk.toString('latin1');
              if (text.includes('"jsonrpc"') && text.endsWith('}')) resolve(text);
            });
            socket.resume();
          }),
      ),
    );
    // Each got its whole answer or, once the outbox was full, -32011 (how many depends on the kernel's buffers).
    for (const text of texts) expect(text.includes('"code":-32011') || text.includes('"hits"')).toBe(true);
    for (const socket of sockets.splice(0)) socket.destroy();
  });
});

describe('a stdio client pipelining thousands of requests', () => {
  it('is read only as fast as it is answered: RSS stays near idle, every request is answered', async () => {
    // The queue's bound in items (4,096) holds; its bound in estimated time is the inference queue's tests' subject,
    // and on a loaded machine 16 requests' work was once estimated past its 2 s (358 of 3,000 refused, -32011).
    const config = {
      'models.encoder': 'use-lite',
      'limits.maxInFlightPerConnection': 16,
      'models.batching.maxQueueWaitMs': 0,
    };
    const dir = mkdtempSync(join(tmpdir(), 'rcp-hostile-'));
    const server = spawnStdio({ config }, ['bin/rcp-server.js', 'serve', '--stdio', '--data', dir]);
    const { child, exited } = server;
    const frames: Frame[] = [];
    readFrames(child, (frame) => frames.push(frame as Frame));
    child.stdin.write(`${JSON.stringify(request(0, 'initialize', { protocolVersion: 1, capabilities: {} }))}\n`);
    child.stdin.write(`${JSON.stringify(request('warm', 'embed', { inputs: ['warm up the model'] }))}\n`);
    await until(
      () => frames.length >= 2,
      () => `not warmed up: ${server.stderr()}`,
    );
    const idle = rss(child.pid!);
    const inputs = ['pipelined text', 'another pipelined text'];
    const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify(request(i + 1, 'embed', { inputs })));
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rss(child.pid!))), 100);
    child.stdin.write(`${lines.join('\n')}\n`);
    child.stdin.end();
    expect(await exited).toBe(0);
    clearInterval(sampler);
    expect(frames).toHaveLength(3002);
    // Read as answered, the flood never fills the model queue: every request is served, none refused with -32011.
    expect(frames.filter((frame) => frame.error !== undefined)).toEqual([]);
    expect(peak).toBeLessThan(2 * idle);
  }, 180_000);
});

describe('a stdio client that stops reading its answers', () => {
  it('gets no more work done than it reads: 250 vector-laden retrieves in one write keep RSS under 2× idle', async () => {
    const config = { 'models.encoder': 'use-lite', 'limits.maxInFlightPerConnection': 16 };
    const dir = mkdtempSync(join(tmpdir(), 'rcp-hostile-'));
    const server = spawnStdio({ config }, ['bin/rcp-server.js', 'serve', '--stdio', '--data', dir]);
    const { child, exited } = server;
    const frames: Frame[] = [];
    readFrames(child, (frame) => frames.push(frame as Frame));
    const send = (id: number | string, method: string, params: object) =>
      child.stdin.write(`${JSON.stringify(request(id, method, params))}\n`);
    send(0, 'initialize', { protocolVersion: 1, capabilities: {} });
    const documents = Array.from({ length: 200 }, (_, i) => ({ id: `d${i}`, text: `document ${i} about proteins` }));
    send('add', 'index/add', { documents });
    send('warm', 'retrieve', { query: 'protein', k: 200, includeVectors: true });
    await until(
      () => frames.length >= 3,
      () => `not warmed up: ${server.stderr()}`,
    );
    const idle = rss(child.pid!);
    // Each answer holds 200 vectors of 512 numbers (about 2 MB of JSON): 250 of them held at once would be 500 MB.
    child.stdout.pause();
    const lines = Array.from({ length: 250 }, (_, i) =>
      JSON.stringify(request(i + 1, 'retrieve', { query: 'protein', k: 200, includeVectors: true })),
    );
    child.stdin.write(`${lines.join('\n')}\n`);
    let peak = idle;
    for (let i = 0; i < 50; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      peak = Math.max(peak, rss(child.pid!));
    }
    expect(peak).toBeLessThan(2 * idle);
    child.stdout.resume();
    child.stdin.end();
    expect(await exited).toBe(0);
    // Read at last, every request is answered with its hits.
    const answered = frames.filter((frame) => typeof frame.id === 'number' && frame.id > 0);
    expect(answered.map((frame) => (frame.result as { hits: unknown[] }).hits.length)).toEqual(Array(250).fill(200));
  }, 180_000);
});

describe('what a session or a feedback signal keeps is bounded (§15.5)', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcp-hostile-'));
    server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir]);
  });
  afterAll(() => server.stop());

  const post = async (method: string, params: object, headers: Record<string, string> = {}) => {
    const response = await fetch(`${server.origin}/rcp/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(request(1, method, params)),
    });
    return (await response.json()) as { error?: { code: number; data?: { field?: string } } };
  };

  it('300 sessions opened with 1 MB of capabilities each: -32602 on capabilities, and nothing kept', async () => {
    const idle = rss(server.child.pid!);
    const junk = 'x'.repeat(MB);
    for (let i = 0; i < 300; i++) {
      const answer = await post(
        'initialize',
        { protocolVersion: 1, client: { name: 'hostile' }, capabilities: { 'x-junk': junk } },
        { 'rcp-session': 'new' },
      );
      expect(answer.error).toMatchObject({ code: -32602, data: { field: 'capabilities' } });
    }
    expect(rss(server.child.pid!)).toBeLessThan(idle + 150 * MB);
  });

  it('300 feedback calls with a 1 MB query each: -32602 on query, and nothing kept', async () => {
    await post('initialize', { protocolVersion: 1, client: { name: 'polite' }, capabilities: {} });
    const idle = rss(server.child.pid!);
    const query = 'q'.repeat(MB);
    for (let i = 0; i < 300; i++) {
      const answer = await post('feedback', { query, signals: [{ hitId: `h${i}`, used: true }] });
      expect(answer.error).toMatchObject({ code: -32602, data: { field: 'query' } });
    }
    expect(rss(server.child.pid!)).toBeLessThan(idle + 150 * MB);
  });
});
