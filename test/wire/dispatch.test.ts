import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { error } from '../helpers/frames.js';
import { connect, INITIALIZE, request, TRANSPORTS, type Connection } from '../helpers/wire.js';

/**
 * docs/architecture.md §4.4: the dispatch ladder, one table. Each row is a request after a successful initialize
 * and the error it must get; rows are ordered so that each proves one rung beats the next.
 */
const LADDER: { name: string; method: string; params: object; code: number; data?: object }[] = [
  { name: '§12 -32004 for a method RCP does not define', method: 'does/not/exist', params: {}, code: -32004 },
  { name: '§12 -32004 for an unregistered vendor method', method: 'x-nobody/thing', params: {}, code: -32004 },
  { name: '§12 -32004 beats -32003 even with bad params', method: 'nope', params: { k: 'x' }, code: -32004 },
  {
    name: '§7 -32003 for an RCP method whose capability is not advertised',
    method: 'retrieve',
    params: { query: 'q' },
    code: -32003,
  },
  {
    name: '§7 -32003 for index/add when index is not advertised',
    method: 'index/add',
    params: { documents: [] },
    code: -32003,
  },
  {
    name: '§12 -32003 beats -32602 (bad params to an unadvertised method)',
    method: 'embed',
    params: { inputs: 5 },
    code: -32003,
  },
  {
    name: '§12 -32005 for an advertised method with an unadvertised option value',
    method: 'x-test/echo',
    params: { text: 'x', mode: 'shouty' },
    code: -32005,
    data: { option: 'mode', retryable: false },
  },
  {
    name: '§12 -32005 beats -32602 (bad option and missing field)',
    method: 'x-test/echo',
    params: { mode: 'shouty' },
    code: -32005,
  },
  {
    name: '§12 -32602 with data.field for a missing field',
    method: 'x-test/echo',
    params: {},
    code: -32602,
    data: { field: 'text', retryable: false },
  },
  {
    name: '§4.6 -32602 for a wrong JSON type (no coercion)',
    method: 'x-test/sleep',
    params: { ms: '5' },
    code: -32602,
    data: { field: 'ms' },
  },
  {
    name: '§12 -32602 for an option of the wrong type',
    method: 'x-test/echo',
    params: { text: 'x', mode: 3 },
    code: -32602,
    data: { field: 'mode' },
  },
  {
    name: '§12 -32603 for a handler fault, leaking nothing',
    method: 'x-test/fail',
    params: {},
    code: -32603,
    data: { retryable: true },
  },
];

describe.each(TRANSPORTS)('dispatch ladder over %s', (transport) => {
  let conn: Connection;
  beforeAll(async () => {
    conn = await connect(transport);
    await conn.exchange(INITIALIZE());
  });
  afterAll(async () => conn.close());

  it.each(LADDER)('$name', async ({ method, params, code, data }) => {
    const answer = await conn.exchange(request('ladder', method, params));
    expect(error(answer)).toMatchObject({ code, ...(data === undefined ? {} : { data }) });
    expect(JSON.stringify(answer)).not.toContain('secret internal detail');
  });

  it('§4.6 unknown members and _meta are ignored, not rejected', async () => {
    const answer = await conn.exchange(request(1, 'x-test/echo', { text: 'hi', extra: [1], _meta: { traceId: 't' } }));
    expect(answer).toMatchObject({ id: 1, result: { text: 'hi' } });
  });

  it('§12 an advertised option value is accepted', async () => {
    expect(await conn.exchange(request(1, 'x-test/echo', { text: 'hi', mode: 'upper' }))).toMatchObject({
      result: { text: 'HI' },
    });
  });
});
