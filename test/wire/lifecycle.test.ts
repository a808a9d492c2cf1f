import { afterEach, describe, expect, it } from 'vitest';
import { error } from '../helpers/frames.js';
import { connect, INITIALIZE, request, TRANSPORTS, type Connection, type Frame } from '../helpers/wire.js';

const result = (frame: Frame | Frame[]) => (frame as { result?: Record<string, unknown> }).result;

describe.each(TRANSPORTS)('lifecycle over %s', (transport) => {
  let conn: Connection;
  afterEach(async () => conn?.close());

  it('§7.2 §7.15 info and ping answer before initialize; ping echoes its nonce', async () => {
    conn = await connect(transport);
    const info = result(await conn.exchange(request(1, 'info')));
    expect(info).toMatchObject({ protocolVersion: 1, server: { name: 'rcp-server' } });
    expect(result(await conn.exchange(request(2, 'ping', { nonce: 777 })))).toEqual({ nonce: 777 });
    expect(result(await conn.exchange(request(3, 'ping', { nonce: 'abc' })))).toEqual({ nonce: 'abc' });
    expect(result(await conn.exchange(request(4, 'ping')))).toEqual({});
    expect(error(await conn.exchange(request(5, 'ping', { nonce: { no: 1 } })))).toMatchObject({
      code: -32602,
      data: { field: 'nonce' },
    });
  });

  it('§4.7 echoes the request id with its JSON type and value', async () => {
    conn = await connect(transport);
    for (const id of ['str-id-1', 0, 42, -7, 1.5, 2 ** 53 - 1, '']) {
      expect(await conn.exchange(request(id, 'ping'))).toMatchObject({ jsonrpc: '2.0', id });
    }
  });

  it('§13 rejects every other request before initialize with -32001 (unknown methods too)', async () => {
    conn = await connect(transport);
    for (const [id, method] of [
      [1, 'retrieve'],
      [2, 'x-test/echo'],
      [3, 'does/not/exist'],
    ] as const) {
      expect(error(await conn.exchange(request(id, method, { text: 'x' })))).toMatchObject({
        code: -32001,
        data: { retryable: true },
      });
    }
  });

  it('§13 a failed negotiation (-32002) leaves the session uninitialized; a retry may succeed', async () => {
    conn = await connect(transport);
    const bad = await conn.exchange(request(1, 'initialize', { protocolVersion: 0, client: { name: 'c' } }));
    expect(error(bad)).toMatchObject({ code: -32002, data: { retryable: false } });
    expect(error(await conn.exchange(request(2, 'x-test/echo', { text: 'x' })))).toMatchObject({ code: -32001 });
    const good = result(await conn.exchange(INITIALIZE(3)));
    expect(good).toMatchObject({ protocolVersion: 1 });
    expect(result(await conn.exchange(request(4, 'x-test/echo', { text: 'x' })))).toEqual({ text: 'x' });
  });

  it('§7.1 negotiates min(client, server): a newer client gets version 1', async () => {
    conn = await connect(transport);
    const answer = result(await conn.exchange(request(1, 'initialize', { protocolVersion: 7 })));
    expect(answer).toMatchObject({ protocolVersion: 1 });
  });

  it('§7.1 malformed initialize params are -32602 with data.field and leave the session open to retry', async () => {
    conn = await connect(transport);
    expect(error(await conn.exchange(request(1, 'initialize', {})))).toMatchObject({
      code: -32602,
      data: { field: 'protocolVersion' },
    });
    expect(error(await conn.exchange(request(2, 'initialize', { protocolVersion: '1' })))).toMatchObject({
      code: -32602,
      data: { field: 'protocolVersion' },
    });
    expect(error(await conn.exchange(request(3, 'initialize', { protocolVersion: 1.5 })))).toMatchObject({
      code: -32602,
    });
    expect(result(await conn.exchange(INITIALIZE(4)))).toMatchObject({ protocolVersion: 1 });
  });

  it('§13 a second initialize after success is -32600; §13.2 info then reports the same capabilities', async () => {
    conn = await connect(transport);
    const first = result(await conn.exchange(INITIALIZE(1)));
    expect(error(await conn.exchange(INITIALIZE(2)))).toMatchObject({ code: -32600 });
    const info = result(await conn.exchange(request(3, 'info')));
    expect(info?.capabilities).toEqual(first?.capabilities);
    expect(first?.capabilities).toHaveProperty('x-test');
  });

  it('§14 declares no conformance level while no retrieval capability is advertised (no overclaim)', async () => {
    conn = await connect(transport);
    const info = result(await conn.exchange(INITIALIZE(1)));
    expect((info?._meta as Record<string, unknown> | undefined)?.conformance).toBeUndefined();
  });

  it('§7.12 shutdown answers {} at any time', async () => {
    conn = await connect(transport);
    expect(result(await conn.exchange(request(1, 'shutdown')))).toEqual({});
  });
});
