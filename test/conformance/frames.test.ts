import { afterAll, describe, expect, it } from 'vitest';
import { alsoCheckFrames } from '../helpers/schema.js';
import { connect, request, ROOT, TRANSPORTS, type Connection, type Frame } from '../helpers/wire.js';
import { normativeViolation } from './normative.js';
import { unprefixedFields } from './vendor-prefix.js';

/**
 * Every frame a session emits — a result of each method this server serves, errors down the dispatch ladder (§4),
 * progress (§9) and log (§17.1) notifications, batch replies (§11) — validates against the normative rcp-1.0.json as
 * well as the project's own schemas (which the connection helper checks first), over each transport.
 */
const seen: { frame: unknown; method: string | undefined; violation: string | undefined; unprefixed: string[] }[] = [];
alsoCheckFrames((frame, method) =>
  seen.push({
    frame,
    method,
    violation: normativeViolation(frame, method),
    unprefixed: unprefixedFields(frame, method),
  }),
);

const CONFIG = { 'models.encoder': `${ROOT}/models/use-lite`, 'index.fields': { lang: 'keyword' } };
const DOCUMENTS = [
  { id: 'owl', text: 'Owls hunt at night. They see well in the dark.', meta: { lang: 'en' } },
  { id: 'heart', text: 'The heart pumps blood through the body.', meta: { lang: 'en' } },
  { id: 'stars', text: 'Stars form in clouds of gas and dust.', meta: { lang: 'de' } },
];

/** Requests answered with a result, in order, then requests each answered with an error. */
const RESULTS: [string, Record<string, unknown>][] = [
  ['info', {}],
  ['ping', { nonce: 7 }],
  ['ping', {}],
  ['index/add', { documents: DOCUMENTS, chunk: true }],
  ['index/add', { documents: [{ text: 'A document without an id.' }], _meta: { progressToken: 'a1' } }],
  ['embed', { inputs: ['owls at night', { type: 'text', text: 'blood' }], kind: 'query' }],
  ['embed', { inputs: ['owls'], encoding: 'f32-base64' }],
  ['embed/sparse', { texts: ['owls hunt at night'] }],
  ['embed/multi', { inputs: ['owls hunt', { type: 'text', text: 'at night' }], kind: 'document' }],
  ['embed/multi', { texts: ['owls'], kind: 'query', _meta: { progressToken: 'm1' } }],
  ['embed', { inputs: ['owls'], _meta: { progressToken: 'e1' } }],
  [
    'rerank',
    {
      query: 'night hunters',
      passages: ['Owls hunt at night.', 'Stars form.'],
      method: 'colbert',
      _meta: { progressToken: 'r1' },
    },
  ],
  [
    'retrieve',
    {
      query: 'night hunters',
      k: 2,
      mode: 'hybrid',
      rerank: { method: 'colbert', topN: 3 },
      mmr: { lambda: 0.5 },
      filter: { field: 'lang', op: 'eq', value: 'en' },
      includeVectors: true,
      _meta: { progressToken: 'p1' },
    },
  ],
  ['retrieve', { query: 'blood', k: 1, unit: 'document', mode: 'sparse' }],
  ['retrieve', { query: 'owls in the dark', k: 2, unit: 'passage' }],
  ['retrieve', { query: 'stars', k: 2, unit: 'page', mode: 'dense' }],
  ['retrieve', { query: 'stars', k: 1, fusion: { method: 'graph-walk' }, strict: false }],
  ['query/transform', { query: 'owl hunting', method: 'multi-query', n: 2 }],
  ['query/transform', { query: 'owl huntng', method: 'rewrite' }],
  ['feedback', { query: 'owls', signals: [{ hitId: 'owl#0', used: true, reward: 0.5 }] }],
  ['x-test/echo', { text: 'hello' }],
  ['x-test/progress', { steps: 2, _meta: { progressToken: 9 } }],
  ['index/delete', { ids: ['stars', 'no-such-document'], _meta: { progressToken: 'd1' } }],
];
const ERRORS: [string, Record<string, unknown>, number][] = [
  ['no-such-method', {}, -32004],
  ['graph', { op: 'local', query: 'owls' }, -32003],
  ['retrieve', { query: 'owls', k: 1, mode: 'telepathy' }, -32005],
  ['retrieve', { query: 'owls', k: '5' }, -32602],
  ['x-test/fail', {}, -32603],
];

describe.each(TRANSPORTS)('frames over %s validate against rcp-1.0.json', (transport) => {
  let client: Connection;
  let next = 0;
  afterAll(() => client?.close());

  it('a whole session: every result, error, notification and batch reply', async () => {
    const before = seen.length;
    client = await connect(transport, { config: CONFIG });
    const init = request(++next, 'initialize', {
      protocolVersion: 1,
      client: { name: 'conformance', version: '1' },
      capabilities: { log: {}, streaming: {} },
      _meta: { logLevel: 'debug' },
    });
    expect(await client.exchange(init)).toHaveProperty('result');
    for (const [method, params] of RESULTS) {
      const answer = (await client.exchange(request(++next, method, params))) as Frame;
      expect(answer, `${method} ${JSON.stringify(params)}`).toHaveProperty('result');
    }
    for (const [method, params, code] of ERRORS) {
      const answer = (await client.exchange(request(++next, method, params))) as Frame;
      expect(answer).toMatchObject({ error: { code } });
    }
    expect(await client.exchange('{"jsonrpc":')).toMatchObject({ id: null, error: { code: -32700 } });
    expect(await client.exchange('[]')).toMatchObject({ id: null, error: { code: -32600 } });
    const batch = [request(++next, 'ping', { nonce: 'b' }), request(++next, 'embed', { inputs: ['x'] }), { id: 1 }];
    expect(await client.exchange(batch)).toHaveLength(3);
    expect(await client.exchange(request(++next, 'shutdown'))).toMatchObject({ result: {} });

    const frames = seen.slice(before);
    expect(frames.filter((frame) => frame.violation !== undefined)).toEqual([]);
    // §6.2: every name outside the spec carries the x- prefix (vendor-prefix.ts says which the spec's prose defines).
    expect([...new Set(frames.flatMap((frame) => frame.unprefixed))]).toEqual([]);
    const methods = new Set(frames.map((frame) => frame.method));
    expect([...new Set(RESULTS.map(([method]) => method))].filter((method) => !methods.has(method))).toEqual([]);
    if (transport !== 'http') {
      // Over HTTP, notifications travel only on SSE answers (§5.2), which the HTTP suites check.
      const notifications = client.notifications.map((frame) => frame.method);
      expect(new Set(notifications)).toEqual(new Set(['notifications/progress', 'notifications/log']));
    }
  });
});
