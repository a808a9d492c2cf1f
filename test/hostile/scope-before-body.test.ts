import { mkdtempSync } from 'node:fs';
import { connect as tcp, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';

/**
 * §15.6: a key without the scope a method needs is refused -32012 — and for `POST /rcp/<method>` the method is known
 * from the path (§5.2), so the refusal comes before the body is read: a read-only key cannot make the server read and
 * parse a 15 MB index/add body first. Real process, raw socket: headers and a few bytes sent, the rest never.
 */
const READ_KEY = 'read-only-key-0123456789';
const WRITE_KEY = 'writer-key-0123456789abc';
const MONITOR_KEY = 'monitor-key-0123456789abcd';
const BODY_BYTES = 15 * 1024 * 1024;
let server: ServerProcess;

beforeAll(async () => {
  server = await startHttpProcess(
    ['serve', '--http', '127.0.0.1:0', '--data', mkdtempSync(join(tmpdir(), 'rcp-'))],
    {
      RCP_API_KEYS: JSON.stringify([
        { key: READ_KEY, scopes: ['read'] },
        { key: WRITE_KEY, scopes: ['read', 'write'] },
        { key: MONITOR_KEY, scopes: ['monitor'] },
      ]),
    },
    { monitorKey: MONITOR_KEY },
  );
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

/**
 * POSTs `path` declaring a body of BODY_BYTES and sends only its first bytes; resolves with what comes back before
 * the server closes or `waitMs` passes (then the socket is closed by us).
 */
async function partialPost(path: string, key: string, first: string, waitMs: number): Promise<string> {
  const { hostname, port } = new URL(server.origin);
  const socket: Socket = tcp({ host: hostname, port: Number(port) });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  socket.write(
    `POST ${path} HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\n` +
      `authorization: Bearer ${key}\r\ncontent-length: ${BODY_BYTES}\r\n\r\n${first}`,
  );
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, waitMs);
    const done = () => (clearTimeout(timer), resolve());
    socket.once('close', done);
    // An answer is complete once its declared length has arrived.
    socket.on('data', () => {
      const [head, body] = received.split('\r\n\r\n', 2);
      const length = Number(/content-length: (\d+)/i.exec(head ?? '')?.[1] ?? Number.NaN);
      if (body !== undefined && Buffer.byteLength(body) >= length) done();
    });
  });
  socket.destroy();
  return received;
}

const START = '{"jsonrpc":"2.0","id":7,"method":"index/add","params":{"documents":[{"id":"a","text":"';

describe('a read-only key posting a 15 MB index/add body', () => {
  it('is answered -32012 from the path and the headers, without the server waiting for the body', async () => {
    const started = performance.now();
    const answer = await partialPost('/rcp/index/add', READ_KEY, START, 20_000);
    const tookMs = performance.now() - started;
    const body = answer.split('\r\n\r\n', 2)[1] ?? '';
    expect(answer, answer.slice(0, 300)).toMatch(/^HTTP\/1\.1 200/);
    const frame = JSON.parse(body) as { id: unknown; error?: { code: number; data?: { detail?: string } } };
    expect(frame.error?.code).toBe(-32012);
    expect(frame.error?.data?.detail).toMatch(/write/);
    // Before: nothing until the whole body had come (here: never, so the wait ran out at 20 s).
    expect(tookMs).toBeLessThan(10_000);
  }, 60_000);

  it('a key with the scope is not refused from the path: the server waits for its body', async () => {
    const answer = await partialPost('/rcp/index/add', WRITE_KEY, START, 1_000);
    expect(answer).not.toContain('-32012');
  }, 60_000);
});
