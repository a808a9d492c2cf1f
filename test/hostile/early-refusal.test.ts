import { mkdtempSync } from 'node:fs';
import { connect as tcp, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { request, type Frame } from '../helpers/wire.js';

/**
 * Requests refused before their body is read (§15.5), over a real socket to a real server process: the answer comes
 * while the client is still sending, the rest of the body is read and dropped, and the client reads its JSON-RPC
 * answer — not a reset — and may go on using the connection.
 */
let server: ServerProcess;

/** A caller's share of the model queue: past 50 ms of its own texts waiting, its writes are refused (§15.5). */
const QUEUE_WAIT_MS = 50;
/** limits.maxBodyBytes and limits.maxBufferedBodyBytes, below their defaults so that the bodies past them are quick to send. */
const BODY_LIMIT = 8 * 1024 * 1024;

beforeAll(async () => {
  server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', mkdtempSync(join(tmpdir(), 'rcp-'))], {
    RCP_MODELS_BATCHING_MAX_QUEUE_WAIT_MS: String(QUEUE_WAIT_MS),
    // One text a model call: a caller's texts stay waiting long enough to be seen.
    RCP_MODELS_BATCHING_MAX_BATCH_ITEMS: '1',
    RCP_LIMITS_MAX_BODY_BYTES: String(BODY_LIMIT),
    RCP_LIMITS_MAX_BUFFERED_BODY_BYTES: String(BODY_LIMIT),
  });
}, 120_000);

afterAll(async () => {
  await server.stop();
});

/** An HTTP/1.1 connection read answer by answer: `next()` is the next whole answer's status, headers and frame. */
class Exchange {
  #buffer = Buffer.alloc(0);
  #waiting: (() => void) | undefined;
  closed: Error | 'end' | undefined;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#waiting?.();
    });
    socket.on('error', (error) => {
      this.closed ??= error;
      this.#waiting?.();
    });
    socket.on('end', () => {
      this.closed ??= 'end';
      this.#waiting?.();
    });
  }

  static async open(): Promise<Exchange> {
    const { hostname, port } = new URL(server.origin);
    const socket = tcp({ host: hostname, port: Number(port) });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new Exchange(socket);
  }

  /** Writes `head` for a POST to `method` declaring `length` body bytes, and `body` (all of it or its start). */
  post(method: string, length: number, body: string | Buffer): void {
    const head = `POST /rcp/${method} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
    this.socket.write(head);
    this.socket.write(body);
  }

  /** The next answer once it has arrived whole; rejects if the connection ends or fails before. */
  async next(): Promise<{ status: number; headers: string; frame: Frame }> {
    for (;;) {
      const end = this.#buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const headers = this.#buffer.subarray(0, end).toString('latin1');
        const length = Number(/content-length: (\d+)/i.exec(headers)?.[1] ?? 0);
        if (this.#buffer.length >= end + 4 + length) {
          const body = this.#buffer.subarray(end + 4, end + 4 + length).toString('utf8');
          this.#buffer = this.#buffer.subarray(end + 4 + length);
          return { status: Number(headers.split(' ')[1]), headers, frame: JSON.parse(body) as Frame };
        }
      }
      if (this.closed !== undefined) throw new Error(`connection closed before an answer: ${String(this.closed)}`);
      await new Promise<void>((resolve) => (this.#waiting = resolve));
      this.#waiting = undefined;
    }
  }

  /** Writes `bytes` in pieces, waiting for the socket to take each; the first write error, if any. */
  async send(bytes: Buffer): Promise<Error | undefined> {
    for (let at = 0; at < bytes.length; at += 64 * 1024) {
      if (this.socket.destroyed) return this.closed instanceof Error ? this.closed : new Error('destroyed');
      const written = await new Promise<Error | undefined>((resolve) =>
        this.socket.write(bytes.subarray(at, at + 64 * 1024), (error) => resolve(error ?? undefined)),
      );
      if (written !== undefined) return written;
    }
    return undefined;
  }
}

async function post(frame: Frame): Promise<Frame> {
  const response = await fetch(`${server.origin}/rcp/${String(frame.method)}`, {
    method: 'POST',
    body: JSON.stringify(frame),
  });
  return (await response.json()) as Frame;
}

/** What the server holds of bodies being received, from its metrics (`rcp_http_body_bytes_receiving`). */
async function bodyBytesReceiving(): Promise<number> {
  const text = await (await fetch(`${server.origin}/metrics`)).text();
  const value = /^rcp_http_body_bytes_receiving (\d+)$/m.exec(text)?.[1];
  if (value === undefined) throw new Error('no rcp_http_body_bytes_receiving in the metrics');
  return Number(value);
}

const code = (frame: Frame) => (frame.error as { code?: number } | undefined)?.code;

describe("a write whose caller's share is spent (§15.5)", () => {
  it('is answered -32011 before its body has arrived, and the connection serves the next request', async () => {
    // The holder: one write of 512 one-chunk documents keeps this caller's texts waiting at the model for seconds.
    const documents = Array.from({ length: 512 }, (_, i) => ({ id: `h${i}`, text: `holder document ${i} text` }));
    const holder = post(request('hold', 'index/add', { documents }));
    const small = JSON.stringify(request(2, 'index/add', { documents: [{ id: 'late', text: 'a late write' }] }));
    let answer: Awaited<ReturnType<Exchange['next']>> | undefined;
    // Between two slices of the holder's texts, nothing of this caller's waits for a moment: tried again then.
    for (let attempt = 0; attempt < 8 && answer === undefined; attempt++) {
      // The share is spent once a whole write of this caller's is refused.
      while (code(await post(request(1, 'index/add', { documents: [{ id: 'probe', text: 'probe' }] }))) !== -32011);
      const exchange = await Exchange.open();
      // Half the body: a server that reads it before refusing has nothing to answer yet.
      exchange.post('index/add', Buffer.byteLength(small), small.slice(0, small.length >> 1));
      const early = await Promise.race([
        exchange.next(),
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 5_000)),
      ]);
      if (early !== undefined) {
        exchange.socket.write(small.slice(small.length >> 1));
        // The body was read and dropped: the same connection answers a ping.
        exchange.post(
          'ping',
          Buffer.byteLength(JSON.stringify(request(3, 'ping'))),
          JSON.stringify(request(3, 'ping')),
        );
        const ping = await exchange.next();
        expect(ping.frame).toMatchObject({ id: 3, result: {} });
        exchange.socket.destroy();
        answer = early;
      } else {
        exchange.socket.destroy();
        expect(attempt, 'never answered before the body ended').toBeLessThan(7);
      }
    }
    expect(answer?.status).toBe(200);
    expect(answer?.frame).toMatchObject({ id: null, error: { code: -32011 } });
    expect((answer?.frame.error as { data: { retryAfterMs: number } }).data.retryAfterMs).toBeGreaterThan(0);
    expect(await holder).toMatchObject({ id: 'hold' });
  }, 120_000);
});

/** `bytes` of a JSON string body: what it says does not matter, it is refused before it is parsed. */
const filler = (bytes: number) => Buffer.alloc(bytes, 'a');

describe('a body refused while the client is still sending it (§15.5)', () => {
  it('past the limit: the client sends all 15 MB without a reset, reads -32013, and the connection serves the next request', async () => {
    const exchange = await Exchange.open();
    const body = filler(15 * 1024 * 1024);
    exchange.post('embed', body.length, '');
    const [written, answer] = await Promise.all([exchange.send(body), exchange.next()]);
    expect(written).toBeUndefined();
    expect(answer.frame).toMatchObject({ id: null, error: { code: -32013 } });
    const ping = JSON.stringify(request(3, 'ping'));
    exchange.post('ping', ping.length, ping);
    expect((await exchange.next()).frame).toMatchObject({ id: 3, result: {} });
    exchange.socket.destroy();
  }, 60_000);

  it('past the bytes of bodies being received: the client sends all of it without a reset and reads -32011', async () => {
    // A body held half sent takes most of the budget of bodies being received.
    const holder = await Exchange.open();
    holder.post('embed', BODY_LIMIT - 1024, '');
    const held = BODY_LIMIT - 1024 * 1024;
    expect(await holder.send(filler(held))).toBeUndefined();
    // Written is not yet received: the server may still be reading it (else the next body would take the budget first).
    while ((await bodyBytesReceiving()) < held) await new Promise((resolve) => setImmediate(resolve));
    const exchange = await Exchange.open();
    const body = filler(BODY_LIMIT - 1024);
    exchange.post('embed', body.length, '');
    const [written, answer] = await Promise.all([exchange.send(body), exchange.next()]);
    expect(written).toBeUndefined();
    expect(answer.frame).toMatchObject({ id: null, error: { code: -32011, data: { retryAfterMs: 1000 } } });
    const ping = JSON.stringify(request(3, 'ping'));
    exchange.post('ping', ping.length, ping);
    expect((await exchange.next()).frame).toMatchObject({ id: 3, result: {} });
    exchange.socket.destroy();
    holder.socket.destroy();
  }, 60_000);
});
