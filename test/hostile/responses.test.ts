import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { assertValidFrame } from '../helpers/schema.js';
import { readFrames, request, spawnStdio, type Frame } from '../helpers/wire.js';

/**
 * §15.5 an answer larger than `limits.maxResponseBytes` is never built into an unbounded buffer nor lost: that member
 * is answered -32013 saying how to shrink it, and the rest of its batch is answered as usual, over HTTP and stdio.
 */
const MAX = 8192;
const env = { RCP_LIMITS_MAX_RESPONSE_BYTES: String(MAX) };
const dataDir = () => mkdtempSync(join(tmpdir(), 'rcp-hostile-'));
const BATCH = [request(1, 'ping'), request(2, 'embed', { inputs: Array.from({ length: 4 }, (_, i) => `text ${i}`) })];

function expectShrinkAdvice(frames: Frame[]): void {
  const byId = new Map(frames.map((frame) => [frame.id, frame]));
  expect(byId.get(1)?.result).toEqual({});
  expect(byId.get(2)?.error).toMatchObject({
    code: -32013,
    data: { retryable: false, detail: expect.stringMatching(/exceeds the 8192-byte limit .*fewer hits/) as unknown },
  });
  for (const frame of frames) assertValidFrame(frame);
}

describe('answers over the size cap (§15.5)', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dataDir()], env);
  });
  afterAll(() => server.stop());

  it('over HTTP: the oversized member is -32013 with advice; the others are answered', async () => {
    const response = await fetch(`${server.origin}/rcp`, { method: 'POST', body: JSON.stringify(BATCH) });
    const text = await response.text();
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX);
    expectShrinkAdvice(JSON.parse(text) as Frame[]);
    const small = await fetch(`${server.origin}/rcp/embed`, {
      method: 'POST',
      body: JSON.stringify(request(3, 'embed', { inputs: ['one'], encoding: 'f32-base64' })),
    });
    expect(((await small.json()) as Frame).result).toBeDefined();
  });

  it('over stdio: the same, one line per answer', async () => {
    const config = { 'limits.maxResponseBytes': MAX, 'models.encoder': 'use-lite' };
    const { child, exited } = spawnStdio({ config }, ['bin/rcp-server.js', 'serve', '--stdio', '--data', dataDir()]);
    const frames: unknown[] = [];
    readFrames(child, (frame) => frames.push(frame));
    child.stdin.write(`${JSON.stringify(request(0, 'initialize', { protocolVersion: 1, capabilities: {} }))}\n`);
    child.stdin.write(`${JSON.stringify(BATCH)}\n`);
    child.stdin.end();
    expect(await exited).toBe(0);
    expectShrinkAdvice(frames.find((frame): frame is Frame[] => Array.isArray(frame))!);
  });
});
