import { afterEach, describe, expect, it } from 'vitest';
import { error } from '../helpers/frames.js';
import { connect, INITIALIZE, request, TRANSPORTS, type Connection, type Frame } from '../helpers/wire.js';

type Answer = Frame | Frame[];
const byId = (batch: Answer, id: unknown) => (batch as Frame[]).find((member) => member.id === id);

/**
 * Resolves once the x-test/commit request with this progress token has committed: over stdio and in-process, when
 * its progress frame for the commit arrives (a cancel sent before it could reach the server in the same read as the
 * request and be handled first). Over HTTP, where progress needs an SSE stream this helper does not open, after
 * 100 ms: the cancel is a request of its own, on a connection opened only then, read after the request it names.
 */
async function committed(conn: Connection, token: string): Promise<void> {
  if (conn.transport === 'http') return new Promise((resolve) => setTimeout(resolve, 100));
  const done = () =>
    conn.notifications.some(
      (frame) => (frame.params as { progressToken?: unknown } | undefined)?.progressToken === token,
    );
  for (const deadline = Date.now() + 10_000; !done();) {
    if (Date.now() > deadline) throw new Error(`no progress frame for ${token}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe.each(TRANSPORTS)('envelopes, notifications, batches, cancellation over %s', (transport) => {
  let conn: Connection;
  afterEach(async () => conn?.close());

  it('§4 invalid JSON is -32700 with id null', async () => {
    conn = await connect(transport);
    for (const text of ['{"jsonrpc":"2.0","id":1,', 'not json', '{"a":1}}', '\u00ff\u00fe']) {
      expect(await conn.exchange(text)).toMatchObject({ id: null, error: { code: -32700 } });
    }
  });

  it('§4.1 malformed envelopes are -32600, echoing the id when it is valid', async () => {
    conn = await connect(transport);
    const cases: [unknown, unknown][] = [
      [5, null],
      ['"text"', null],
      [null, null],
      [{ id: 1, method: 'ping' }, 1], // no jsonrpc
      [{ jsonrpc: '1.0', id: 'a', method: 'ping' }, 'a'],
      [{ jsonrpc: '2.0', id: 2, method: 7 }, 2],
      [{ jsonrpc: '2.0', id: 3, method: 'ping', params: [1, 2] }, 3], // §4.1 positional params
      [{ jsonrpc: '2.0', id: null, method: 'ping' }, null], // §4.7 null id on a request
      [{ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }, null],
      [{ jsonrpc: '2.0', id: true, method: 'ping' }, null],
    ];
    for (const [frame, id] of cases) {
      const text = typeof frame === 'string' ? frame : JSON.stringify(frame);
      expect(await conn.exchange(text)).toMatchObject({ id, error: { code: -32600 } });
    }
  });

  it('§4.7 §15.5 a string id over 1,024 characters is -32600 with id null: no answer echoes megabytes', async () => {
    conn = await connect(transport);
    await conn.exchange(INITIALIZE());
    const answer = (await conn.exchange(JSON.stringify(request('x'.repeat(100_000), 'ping')))) as Frame;
    expect(answer).toMatchObject({ id: null, error: { code: -32600 } });
    expect(JSON.stringify(answer).length).toBeLessThan(1_000);
    expect(await conn.exchange(request('y'.repeat(1_024), 'ping'))).toMatchObject({
      id: 'y'.repeat(1_024),
      result: {},
    });
  });

  it('§4.5 notifications are never answered, whatever they name (§14.1 item 6)', async () => {
    conn = await connect(transport);
    for (const method of ['retrieve', 'info', 'ping', 'does/not/exist', 'initialize', 'notifications/whatever']) {
      await conn.silent({ jsonrpc: '2.0', method, params: {} });
    }
    await conn.silent({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 12345 } });
    // A notification does nothing: the session is still uninitialized after an `initialize` notification.
    expect(error(await conn.exchange(request(1, 'x-test/echo', { text: 'x' })))).toMatchObject({ code: -32001 });
  });

  it('§4.5 a notification is never answered, not even when its params are not an object', async () => {
    conn = await connect(transport);
    await conn.exchange(INITIALIZE());
    for (const params of [[1], [], 'text', 7]) {
      for (const method of ['notifications/cancel', 'retrieve', 'x-test/echo', 'does/not/exist']) {
        await conn.silent({ jsonrpc: '2.0', method, params });
      }
    }
    // In a batch they drop out like any notification (§11): nothing at all to answer.
    await conn.silent(
      JSON.stringify([
        { jsonrpc: '2.0', method: 'notifications/cancel', params: [1] },
        { jsonrpc: '2.0', method: 'retrieve', params: [] },
      ]),
    );
    // The same frame with an id is a request, and its positional params are -32600 (§4.1).
    expect(await conn.exchange({ jsonrpc: '2.0', id: 5, method: 'retrieve', params: [] })).toMatchObject({
      id: 5,
      error: { code: -32600 },
    });
  });

  it('§4.5 a notifications/* frame carrying an id is -32600', async () => {
    conn = await connect(transport);
    expect(await conn.exchange(request(9, 'notifications/cancel', { id: 1 }))).toMatchObject({
      id: 9,
      error: { code: -32600 },
    });
  });

  it('§11 an empty batch is one non-array -32600 with id null', async () => {
    conn = await connect(transport);
    const answer = await conn.exchange('[]');
    expect(Array.isArray(answer)).toBe(false);
    expect(answer).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('§11 a batch of notifications only gets no answer at all', async () => {
    conn = await connect(transport);
    await conn.silent(
      JSON.stringify([
        { jsonrpc: '2.0', method: 'ping' },
        { jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 1 } },
      ]),
    );
  });

  it('§11 a malformed member gets its own -32600 (id null) while the rest proceed; notifications drop out', async () => {
    conn = await connect(transport);
    const batch = [
      request('a', 'ping', { nonce: 1 }),
      { jsonrpc: '2.0', method: 'ping' },
      5,
      { jsonrpc: '2.0', id: 'b' },
      request('c', 'x-test/echo', { text: 'x' }),
      [],
    ];
    const answer = await conn.exchange(JSON.stringify(batch));
    expect(Array.isArray(answer)).toBe(true);
    expect(answer).toHaveLength(5);
    expect(byId(answer, 'a')).toMatchObject({ result: { nonce: 1 } });
    expect(byId(answer, 'b')).toMatchObject({ error: { code: -32600 } });
    expect(byId(answer, 'c')).toMatchObject({ error: { code: -32001 } });
    expect((answer as Frame[]).filter((m) => m.id === null)).toHaveLength(2);
  });

  it('§11 batch members run concurrently', async () => {
    conn = await connect(transport);
    await conn.exchange(INITIALIZE());
    const started = Date.now();
    const answer = await conn.exchange(JSON.stringify([1, 2, 3].map((id) => request(id, 'x-test/sleep', { ms: 600 }))));
    expect(answer).toHaveLength(3);
    // One after another would take 1800 ms.
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("§13.1 a batch member's deadline counts from the batch's arrival: members still waiting when it passes are -32014", async () => {
    conn = await connect(transport);
    await conn.exchange(INITIALIZE());
    // 96 sleeps of 100 ms, eight at a time, take 1.2 s; each may take 1 s from the batch's arrival.
    const members = Array.from({ length: 96 }, (_, id) =>
      request(id, 'x-test/sleep', { ms: 100, _meta: { deadlineMs: 1_000 } }),
    );
    const answer = (await conn.exchange(JSON.stringify(members))) as Frame[];
    const codes = answer.map((member) => (member.error as { code: number } | undefined)?.code ?? 0);
    expect(codes).toHaveLength(96);
    expect(codes.filter((code) => code === 0).length).toBeGreaterThan(0);
    expect(codes.filter((code) => code === -32014).length).toBeGreaterThan(0);
    expect(codes.filter((code) => code !== 0 && code !== -32014)).toEqual([]);
  });

  it('§11 §12 a batch over the configured cap is one -32013', async () => {
    conn = await connect(transport, { config: { 'limits.maxBatchSize': 3 } });
    const answer = await conn.exchange(JSON.stringify([1, 2, 3, 4].map((id) => request(id, 'ping'))));
    expect(answer).toMatchObject({ id: null, error: { code: -32013, data: { retryable: false } } });
    expect(await conn.exchange(JSON.stringify([1, 2, 3].map((id) => request(id, 'ping'))))).toHaveLength(3);
  });

  it('§7.14 notifications/cancel aborts the named request, which gets exactly one -32006', async () => {
    conn = await connect(transport);
    await conn.exchange(INITIALIZE());
    const started = Date.now();
    conn.send(request(7, 'x-test/sleep', { ms: 10_000 }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    conn.send({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 7, reason: 'user aborted' } });
    expect(await conn.reply(7)).toMatchObject({ id: 7, error: { code: -32006 } });
    expect(Date.now() - started).toBeLessThan(5_000);
    // Cancelling it again, now answered, is a no-op (§7.14).
    await conn.silent({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 7 } });
  });

  it('§13.1 the server deadline answers -32014 (retryable); a smaller _meta.deadlineMs wins', async () => {
    conn = await connect(transport, { config: { 'limits.requestTimeoutMs': 1000 } });
    await conn.exchange(INITIALIZE());
    expect(await conn.exchange(request(1, 'x-test/sleep', { ms: 5_000 }))).toMatchObject({
      error: { code: -32014, data: { retryable: true } },
    });
    const started = Date.now();
    const answer = await conn.exchange(request(2, 'x-test/sleep', { ms: 5_000, _meta: { deadlineMs: 30 } }));
    expect(answer).toMatchObject({ error: { code: -32014 } });
    // Well before the server's own deadline (1000 ms): the smaller one was applied.
    expect(Date.now() - started).toBeLessThan(700);
    // A larger _meta.deadlineMs never extends the server's own deadline.
    expect(await conn.exchange(request(3, 'x-test/sleep', { ms: 2_000, _meta: { deadlineMs: 60_000 } }))).toMatchObject(
      {
        error: { code: -32014 },
      },
    );
    expect(await conn.exchange(request(4, 'x-test/sleep', { ms: 10 }))).toMatchObject({ result: { slept: 10 } });
  });

  it('§13.1 a _meta.deadlineMs that is no count of milliseconds remaining is -32602, never ignored', async () => {
    conn = await connect(transport);
    await conn.exchange(INITIALIZE());
    for (const [i, deadlineMs] of [0, -1, '5', 1e308, true].entries()) {
      const answer = await conn.exchange(request(i + 1, 'x-test/sleep', { ms: 10, _meta: { deadlineMs } }));
      expect(answer).toMatchObject({ error: { code: -32602, data: { field: '_meta.deadlineMs' } } });
    }
    const fractional = await conn.exchange(request(9, 'x-test/sleep', { ms: 10, _meta: { deadlineMs: 500.5 } }));
    expect(fractional).toMatchObject({ result: { slept: 10 } });
    // §4.6 lists deadlineMs among no integers: a fraction is the deadline as given, never rounded up to a longer one.
    const short = await conn.exchange(request(10, 'x-test/sleep', { ms: 1_000, _meta: { deadlineMs: 1.5 } }));
    expect(short).toMatchObject({ error: { code: -32014, message: 'deadline of 1.5 ms elapsed' } });
  });

  it('§13.1 §7.14 a write past its commit is answered with its result, whatever the deadline or a cancel says', async () => {
    conn = await connect(transport);
    await conn.exchange(INITIALIZE());
    const late = await conn.exchange(request(1, 'x-test/commit', { before: 0, after: 300, _meta: { deadlineMs: 30 } }));
    expect(late).toMatchObject({ result: { committed: true } });
    conn.send(request(2, 'x-test/commit', { before: 0, after: 300, _meta: { progressToken: 'commit-2' } }));
    await committed(conn, 'commit-2');
    conn.send({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 2 } });
    expect(await conn.reply(2)).toMatchObject({ result: { committed: true } });
    // Before its commit, the deadline still wins and nothing is applied.
    const early = await conn.exchange(
      request(3, 'x-test/commit', { before: 300, after: 0, _meta: { deadlineMs: 30 } }),
    );
    expect(early).toMatchObject({ error: { code: -32014 } });
  });

  it('§4.7 a second request with an id already in flight is -32600; the first is unaffected', async () => {
    conn = await connect(transport);
    await conn.exchange(INITIALIZE());
    conn.send(request('dup', 'x-test/sleep', { ms: 1500 }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await conn.exchange(request('dup', 'x-test/sleep', { ms: 1 }));
    expect(second).toMatchObject({ id: 'dup', error: { code: -32600 } });
    expect(await conn.reply('dup')).toMatchObject({ id: 'dup', result: { slept: 1500 } });
  });

  it('§4.6 NaN and Infinity never reach the wire: a method that makes them is answered finite sentinels', async () => {
    conn = await connect(transport);
    await conn.exchange(INITIALIZE());
    expect(await conn.exchange(request(1, 'x-test/non-finite'))).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: { score: Number.MAX_VALUE, low: -Number.MAX_VALUE, vector: [0.5, 0] },
    });
  });

  it('§4.8 §4.6 the full Unicode range survives the round trip', async () => {
    conn = await connect(transport);
    await conn.exchange(INITIALIZE());
    const text = 'naïve café — 東京 🚀 \u2028\u2029 "quoted" \\ \n\t';
    expect(await conn.exchange(request(1, 'x-test/echo', { text }))).toMatchObject({ result: { text } });
  });
});

describe.each(['in-process', 'stdio'] as const)('§9 progress over %s', (transport) => {
  let conn: Connection;
  afterEach(async () => conn?.close());

  it('§9 emits notifications/progress echoing the token before the final answer, and none without a token', async () => {
    conn = await connect(transport);
    await conn.exchange(INITIALIZE());
    await conn.exchange(request(1, 'x-test/progress', { steps: 3, _meta: { progressToken: 'tok-1' } }));
    expect(conn.notifications).toHaveLength(3);
    for (const frame of conn.notifications) {
      expect(frame).toMatchObject({
        method: 'notifications/progress',
        params: { progressToken: 'tok-1', stage: 'recall' },
      });
    }
    conn.notifications.length = 0;
    await conn.exchange(request(2, 'x-test/progress', { steps: 2 }));
    await conn.exchange(request(3, 'x-test/progress', { steps: 2, _meta: { progressToken: 1.5 } }));
    expect(conn.notifications).toHaveLength(0);
  });
});
