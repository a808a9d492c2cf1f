import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, INITIALIZE, request, type Connection, type Frame } from '../helpers/wire.js';

/**
 * Admission (§12.2, §15.5) against the real server over a real pipe and a real socket: per-caller rate
 * limits by method class and load shedding both answer -32011 with `retryAfterMs` in a JSON-RPC frame, while the
 * lifecycle (`ping`, `info`) and `notifications/cancel` keep working and admitted work finishes.
 */
type RetryError = { code: number; message: string; data: { retryable: boolean; retryAfterMs: number; detail: string } };

let open: Connection | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

async function start(transport: 'stdio' | 'http', config: Record<string, unknown>): Promise<Connection> {
  open = await connect(transport, { config });
  expect((await open.exchange(INITIALIZE(0))) as Frame).toHaveProperty('result');
  return open;
}

const call = (connection: Connection, id: number | string, method: string, params: object = {}): Promise<Frame> => {
  connection.send(request(id, method, params));
  return connection.reply(id);
};

/** Lag past 200 ms in two consecutive 100 ms samples is overload. */
const LAGGY = { maxEventLoopDelayMs: 200, maxHeapUsedRatio: 0.95, maxRssBytes: 0, sampleIntervalMs: 100 };

describe.each(['stdio', 'http'] as const)('admission over %s', (transport) => {
  it('rate limits reads per caller: -32011 with retryAfterMs from the bucket; ping, info and cancel still work', async () => {
    // One read a second, a bucket of one: a slow run of the test cannot refill it unseen.
    const connection = await start(transport, { 'limits.rateLimit': { reads: 1, writes: 0, models: 0 } });
    // Over stdio the token goes to a slow request, which a cancel still reaches (notifications are exempt).
    if (transport === 'stdio') connection.send(request('slow', 'x-test/sleep', { ms: 5000 }));
    else expect((await call(connection, 'spent', 'x-test/echo', { text: 'spent' })).result).toBeDefined();
    const refused = (await call(connection, 1, 'x-test/echo', { text: 'a' })).error as RetryError;
    expect(refused.code).toBe(-32011);
    expect(refused.data.retryable).toBe(true);
    expect(refused.data.retryAfterMs).toBeGreaterThan(0);
    expect(refused.data.retryAfterMs).toBeLessThanOrEqual(1000);
    for (let i = 0; i < 5; i++) {
      expect((await call(connection, 10 + i, 'ping')).result).toEqual({});
      expect((await call(connection, 20 + i, 'info')).result).toHaveProperty('capabilities');
    }
    if (transport === 'stdio') {
      connection.send({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 'slow' } });
      expect(((await connection.reply('slow')).error as RetryError).code).toBe(-32006);
    }
    await sleep(refused.data.retryAfterMs + 30);
    expect((await call(connection, 2, 'x-test/echo', { text: 'b' })).result).toEqual({ text: 'b' });
  });

  it('§15.5 sheds load while the event loop lags: new work -32011, in-flight work finishes, ping answers, then it recovers', async () => {
    const connection = await start(transport, { 'limits.shedding': LAGGY });
    connection.send(request('inflight', 'x-test/sleep', { ms: 200 }));
    await sleep(50); // admitted before the lag starts
    // Sustained lag: 400 ms stalls for 4.8 s with the loop turning in between; a request arriving meanwhile, after
    // several lagging samples, is refused.
    connection.send(request('busy', 'x-test/block', { ms: 400, slices: 12 }));
    await sleep(2500);
    const refused = (await call(connection, 2, 'x-test/echo', { text: 'later' })).error as RetryError;
    expect(refused.code).toBe(-32011);
    expect(refused.data.detail).toMatch(/server overloaded: event loop delay \d+ ms > 200 ms/);
    expect(refused.data.retryAfterMs).toBeGreaterThanOrEqual(100);
    expect((await connection.reply('inflight')).result).toEqual({ slept: 200 });
    expect((await connection.reply('busy')).result).toEqual({ blocked: 4800 });
    expect((await call(connection, 3, 'ping')).result).toEqual({});
    if (connection.origin !== undefined) expect((await fetch(`${connection.origin}/healthz`)).status).toBe(200);
    await sleep(refused.data.retryAfterMs + 300);
    expect((await call(connection, 4, 'x-test/echo', { text: 'now' })).result).toEqual({ text: 'now' });
  });

  it('§15.5 one stall that has ended is not overload: the next request is served', async () => {
    const connection = await start(transport, { 'limits.shedding': LAGGY });
    expect((await call(connection, 1, 'x-test/block', { ms: 600 })).result).toEqual({ blocked: 600 });
    expect((await call(connection, 2, 'x-test/echo', { text: 'served' })).result).toEqual({ text: 'served' });
  });
});
