import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { registerTestMethods } from '../fixtures/test-methods.js';
import { assertValidFrame } from '../helpers/schema.js';
import { INITIALIZE, request, testConfig, type Frame } from '../helpers/wire.js';

/** Rate limits over a real HTTP socket: the refusal is a JSON-RPC -32011 answer (HTTP 200), per method class. */
let app: App;
let origin: string;
beforeAll(async () => {
  app = createApp(testConfig({ 'limits.rateLimit': { reads: 2, writes: 0, models: 0 } }), {
    register: registerTestMethods,
  });
  origin = await (await app.buildHttp()).listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => app.close());

async function post(body: object): Promise<{ status: number; frame: Frame }> {
  const response = await fetch(`${origin}/rcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const frame = (await response.json()) as Frame;
  assertValidFrame(frame);
  return { status: response.status, frame };
}

describe('HTTP rate limits (-32011 with retryAfterMs)', () => {
  it('refuses the third read within a second, keeps answering ping, and lets the caller back after retryAfterMs', async () => {
    expect((await post(INITIALIZE(1))).frame.result).toBeDefined();
    expect((await post(request(2, 'x-test/echo', { text: 'a' }))).frame.result).toBeDefined();
    const refused = await post(request(3, 'x-test/echo', { text: 'b' }));
    expect(refused.status).toBe(200);
    const error = refused.frame.error as { code: number; data: { retryable: boolean; retryAfterMs: number } };
    expect(error.code).toBe(-32011);
    expect(error.data.retryable).toBe(true);
    expect(error.data.retryAfterMs).toBeGreaterThan(0);
    expect(error.data.retryAfterMs).toBeLessThanOrEqual(500);
    for (let i = 0; i < 5; i++) expect((await post(request(10 + i, 'ping'))).frame.result).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, error.data.retryAfterMs + 20));
    expect((await post(request(4, 'x-test/echo', { text: 'c' }))).frame.result).toBeDefined();
  });
});
