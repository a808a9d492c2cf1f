import { mkdtempSync } from 'node:fs';
import { connect as tcp } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { request, type Frame } from '../helpers/wire.js';

/**
 * §13.1: a client hanging up abandons its request, and only its request. A batch (§11) runs a few members at a time,
 * so members still waiting when the client hangs up start with their request already cancelled: each must end as
 * that caller's -32006, never as an error nobody listens to (an unhandled rejection ends the process).
 */
let server: ServerProcess;

beforeAll(async () => {
  server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', mkdtempSync(join(tmpdir(), 'rcp-'))]);
  const documents = Array.from({ length: 50 }, (_, i) => ({ id: `d${i}`, text: `cancer cell ${i} grows` }));
  expect((await post(request(1, 'index/add', { documents }))).error).toBeUndefined();
}, 120_000);

afterAll(async () => {
  await server.stop();
});

async function post(frame: Frame): Promise<Frame> {
  const response = await fetch(`${server.origin}/rcp/${String(frame.method)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(frame),
  });
  return (await response.json()) as Frame;
}

/**
 * `frame` posted until it is not refused -32011, waiting each refusal's `retryAfterMs` (§12.2): the batch's members
 * already running still hold its caller's places (one per member running, docs/operations.md) for a moment.
 */
async function served(frame: Frame): Promise<Frame> {
  for (;;) {
    const answer = await post(frame);
    const error = answer.error as { code: number; data?: { retryAfterMs?: number } } | undefined;
    if (error?.code !== -32011) return answer;
    await new Promise((resolve) => setTimeout(resolve, error.data?.retryAfterMs ?? 100));
  }
}

/** Sends `frames` as one batch on a connection of its own, then hangs up once the server has read it. */
async function hangUpAfter(frames: Frame[]): Promise<void> {
  const { hostname, port } = new URL(server.origin);
  const socket = tcp({ host: hostname, port: Number(port) });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const body = JSON.stringify(frames);
  socket.write(
    `POST /rcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  // Texts waiting for the model: the server has read the batch and started its first members.
  while (!(await modelBusy()));
  socket.destroy();
}

/** Whether texts wait for the model (/metrics, §17). */
async function modelBusy(): Promise<boolean> {
  const metrics = await (await fetch(`${server.origin}/metrics`)).text();
  return /rcp_model_queue_depth\{[^}]*\} [1-9]/.test(metrics);
}

/** Texts of about the encoder's window each: seconds of model work for the batch's first members. */
const slowTexts = Array.from({ length: 16 }, (_, i) =>
  Array.from({ length: 120 }, (_, w) => `protein${(i * 7 + w * 3) % 101}`).join(' '),
);

describe('a client hanging up mid-batch (§11, §13.1)', () => {
  it('the members not yet started are abandoned with it: the process lives and serves the next client', async () => {
    for (let round = 0; round < 3; round++) {
      // The first eight members hold the batch's lanes; the eight retrieves start only after the hang-up.
      const batch = [
        ...Array.from({ length: 8 }, (_, i) => request(`e${i}`, 'embed', { texts: slowTexts })),
        ...Array.from({ length: 8 }, (_, i) => request(`r${i}`, 'retrieve', { query: `cancer cell ${i}`, k: 10 })),
      ];
      await hangUpAfter(batch);
      expect((await served(request(round, 'retrieve', { query: 'cancer cell', k: 3 }))).result).toBeDefined();
    }
    expect(server.child.exitCode).toBeNull();
    expect(server.stderr()).not.toMatch(/unhandled|RpcError: cancelled/i);
  }, 120_000);
});
