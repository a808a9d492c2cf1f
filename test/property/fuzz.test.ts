import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseFrame, serialize } from '../../src/protocol/frames.js';
import { registerTestMethods } from '../fixtures/test-methods.js';
import { until } from '../helpers/children.js';
import { assertValidFrame } from '../helpers/schema.js';
import { readFrames, request, spawnStdio, testConfig, type StdioChild } from '../helpers/wire.js';

/**
 * §14.1 item 5: whatever arrives, the server answers well-formed JSON-RPC (or stays silent for a notification),
 * never crashes, and still answers `ping` afterwards.
 */
// `shutdown` is left out: it legitimately ends the session (proven in the lifecycle and stdio tests).
const METHODS = [
  'initialize',
  'info',
  'ping',
  'retrieve',
  'x-test/echo',
  'x-test/sleep',
  'notifications/cancel',
  'nope',
];

/** Frames that look almost right: the interesting part of the input space. */
const nearFrame = fc.record(
  {
    jsonrpc: fc.constantFrom('2.0', '1.0', 2, null),
    id: fc.oneof(fc.string(), fc.integer(), fc.double(), fc.constant(null), fc.boolean(), fc.object()),
    method: fc.oneof(fc.constantFrom(...METHODS), fc.string(), fc.integer()),
    params: fc.oneof(
      fc.object(),
      fc.array(fc.jsonValue()),
      fc.record({ text: fc.oneof(fc.string(), fc.integer()), mode: fc.string(), ms: fc.integer({ min: -5, max: 5 }) }),
      fc.record({ protocolVersion: fc.oneof(fc.integer(), fc.double(), fc.string()) }),
      fc.record({
        nonce: fc.jsonValue(),
        _meta: fc.record({ deadlineMs: fc.jsonValue(), progressToken: fc.jsonValue() }),
      }),
    ),
  },
  { requiredKeys: [] },
);

const anyMessage = fc.oneof(fc.jsonValue(), nearFrame, fc.array(nearFrame, { maxLength: 5 }));

const isNotification = (value: unknown): boolean =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  !('id' in value) &&
  (value as { jsonrpc?: unknown }).jsonrpc === '2.0' &&
  typeof (value as { method?: unknown }).method === 'string' &&
  ((value as { params?: unknown }).params === undefined ||
    (typeof (value as { params?: unknown }).params === 'object' &&
      (value as { params?: unknown }).params !== null &&
      !Array.isArray((value as { params?: unknown }).params)));

const deep = (depth: number, open: string, close: string) => open.repeat(depth) + close.repeat(depth);
const DEEP_TEXTS = [
  deep(100_000, '[', ']'),
  deep(100_000, '{"a":', '}').replace(/\{"a":\}$/, '{}'),
  `{"jsonrpc":"2.0","id":1,"method":"x-test/echo","params":{"text":"x","deep":${deep(5_000, '[', ']')}}}`,
  `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"nonce":${deep(50_000, '[', ']')}}}`,
];

describe('in-process dispatch under arbitrary input', () => {
  let app: App;
  beforeAll(() => {
    app = createApp(testConfig(), { register: registerTestMethods });
  });
  afterAll(async () => app.close());

  it('§14.1 answers every arbitrary JSON value well-formed, and notifications not at all', async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), anyMessage, async (initialized, value) => {
        const session = app.createSession();
        if (initialized) await session.handle(request(0, 'initialize', { protocolVersion: 1 }));
        const reply = await session.handle(value, (frame) => assertValidFrame(frame));
        if (isNotification(value)) expect(reply).toBeUndefined();
        if (reply !== undefined) assertValidFrame(JSON.parse(serialize(reply)));
        expect(await session.handle(request('after', 'ping'))).toMatchObject({ id: 'after', result: {} });
      }),
      { numRuns: 1500 },
    );
  });

  it('§4 arbitrary text is -32700 or a well-formed answer; deep nesting is survived', async () => {
    const session = app.createSession();
    const texts = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.json());
    await fc.assert(
      fc.asyncProperty(texts, async (text) => {
        const parsed = parseFrame(text);
        const reply = parsed.ok ? await session.handle(parsed.value) : parsed.reply;
        if (reply !== undefined) assertValidFrame(reply);
      }),
      { numRuns: 1000 },
    );
    for (const text of DEEP_TEXTS) {
      const parsed = parseFrame(text);
      const reply = parsed.ok ? await session.handle(parsed.value) : parsed.reply;
      if (reply !== undefined) assertValidFrame(JSON.parse(serialize(reply)));
    }
  });
});

describe('stdio child under arbitrary bytes', () => {
  let server: StdioChild;
  const frames: unknown[] = [];
  beforeAll(() => {
    server = spawnStdio({ config: { 'limits.maxBodyBytes': 1 << 20 } });
    readFrames(server.child, (frame) => {
      assertValidFrame(frame);
      frames.push(frame);
    });
  });
  afterAll(() => void server.child.kill('SIGKILL'));

  it('§5.1 survives arbitrary bytes, arbitrary JSON and deep nesting, then still answers ping', async () => {
    const samples = fc.sample(
      fc.oneof(
        fc.uint8Array({ maxLength: 200 }),
        anyMessage.map((v) => Buffer.from(`${serialize(v)}\n`)),
      ),
      {
        numRuns: 400,
        seed: 42,
      },
    );
    for (const bytes of samples) server.child.stdin.write(bytes);
    for (const text of DEEP_TEXTS) server.child.stdin.write(`${text}\n`);
    server.child.stdin.write(`\n${serialize(request('alive', 'ping'))}\n`);
    const alive = () => {
      expect(server.child.exitCode).toBeNull();
      return frames.some((f) => (f as { id?: unknown }).id === 'alive');
    };
    await until(alive, () => `no answer to the ping: ${server.stderr()}`);
    expect(frames.length).toBeGreaterThan(100);
  });
});

describe('HTTP server under arbitrary bodies', () => {
  let app: App;
  let origin: string;
  beforeAll(async () => {
    app = createApp(testConfig({ 'http.port': 0 }), { register: registerTestMethods });
    origin = await (await app.buildHttp()).listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => app.close());

  it('§5.2 answers 200 with a valid frame or 204, never a 5xx, and still answers ping', async () => {
    const bodies = fc.sample(
      fc.oneof(
        fc.uint8Array({ maxLength: 200 }),
        anyMessage.map((v) => serialize(v)),
      ),
      { numRuns: 300, seed: 7 },
    );
    for (const body of [...bodies, ...DEEP_TEXTS]) {
      const response = await fetch(`${origin}/rcp`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      });
      expect([200, 204]).toContain(response.status);
      const text = await response.text();
      if (response.status === 200) assertValidFrame(JSON.parse(text));
      else expect(text).toBe('');
    }
    const ping = await fetch(`${origin}/rcp/ping`, { method: 'POST', body: serialize(request(1, 'ping')) });
    expect(await ping.json()).toMatchObject({ id: 1, result: {} });
  });
});
