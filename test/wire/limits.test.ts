import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, INITIALIZE, request, ROOT, type Connection, type Frame } from '../helpers/wire.js';

/**
 * §4.7 / §15.5 operational bounds, enforced the same over a real pipe and a real socket: query length, filter depth
 * and size (-32602 naming the field), and a fuzz of sizes around every bound, with rate limits on, that must never
 * produce -32603, a crash, or a server that stops answering ping.
 */
const LIMITS = { maxQueryChars: 64, maxFilterDepth: 4, maxFilterNodes: 10 };
const CONFIG = {
  'models.encoder': `${ROOT}/models/use-lite`,
  'models.embedBatchLimit': 8,
  'models.rerankMaxCandidates': 8,
  'limits.maxQueryChars': LIMITS.maxQueryChars,
  'limits.maxFilterDepth': LIMITS.maxFilterDepth,
  'limits.maxFilterNodes': LIMITS.maxFilterNodes,
  'limits.maxBatchSize': 6,
  'limits.rateLimit': { reads: 200, writes: 50, models: 100 },
  'retrieve.maxK': 20,
  'index.fields': { lang: 'keyword', year: 'int' },
};

type RpcFailure = { code: number; data?: { field?: string } };

/** A filter `depth` levels deep: nots around one condition. */
const nested = (depth: number): object =>
  depth === 0 ? { field: 'lang', op: 'eq', value: 'en' } : { not: nested(depth - 1) };

describe.each(['stdio', 'http'] as const)('limits over %s', (transport) => {
  let connection: Connection;
  let nextId = 1;
  const call = async (method: string, params: object): Promise<Frame> => {
    const id = nextId++;
    connection.send(request(id, method, params));
    return connection.reply(id);
  };
  const failureOf = (frame: Frame) => frame.error as RpcFailure | undefined;

  beforeAll(async () => {
    connection = await connect(transport, { config: CONFIG });
    expect(await connection.exchange(INITIALIZE(0))).toHaveProperty('result');
    const documents = ['en', 'de', 'fr'].map((lang, i) => ({
      id: `d${i}`,
      text: `text ${lang}`,
      meta: { lang, year: i },
    }));
    expect(await call('index/add', { documents })).toHaveProperty('result');
  });
  afterAll(() => connection.close());

  it('a query up to maxQueryChars is served; one longer is -32602 on query (retrieve and rerank)', async () => {
    expect(await call('retrieve', { query: 'q'.repeat(LIMITS.maxQueryChars), k: 1 })).toHaveProperty('result');
    const long = 'q'.repeat(LIMITS.maxQueryChars + 1);
    expect(failureOf(await call('retrieve', { query: long, k: 1 }))).toMatchObject({
      code: -32602,
      data: { field: 'query' },
    });
    const blocks = [
      { type: 'text', text: long.slice(0, 40) },
      { type: 'text', text: long.slice(0, 40) },
    ];
    expect(failureOf(await call('retrieve', { query: blocks, k: 1 }))).toMatchObject({ code: -32602 });
    expect(failureOf(await call('rerank', { query: long, passages: ['a'], method: 'colbert' }))).toMatchObject({
      code: -32602,
      data: { field: 'query' },
    });
  });

  it('a filter deeper than maxFilterDepth, or with more nodes than maxFilterNodes, is -32602', async () => {
    const ok = await call('retrieve', { query: 'text', k: 3, filter: nested(LIMITS.maxFilterDepth) });
    expect(ok).toHaveProperty('result');
    const deep = failureOf(await call('retrieve', { query: 'text', k: 3, filter: nested(LIMITS.maxFilterDepth + 1) }));
    expect(deep).toMatchObject({ code: -32602 });
    expect(deep?.data?.field).toMatch(/^filter(\.not)+$/);
    const values = Array.from({ length: LIMITS.maxFilterNodes }, (_, i) => `v${i}`);
    const wide = failureOf(
      await call('retrieve', { query: 'text', k: 3, filter: { field: 'lang', op: 'in', value: values } }),
    );
    expect(wide).toMatchObject({ code: -32602, data: { field: 'filter' } });
    const fits = { field: 'lang', op: 'in', value: values.slice(0, LIMITS.maxFilterNodes - 1) };
    expect(await call('retrieve', { query: 'text', k: 3, filter: fits })).toHaveProperty('result');
  });

  it('fuzz: sizes around every bound get a precise answer, never -32603, and ping still answers', async () => {
    const text = (max: number) => fc.string({ minLength: 0, maxLength: max });
    const retrieve = fc.record({
      query: fc.oneof(
        text(LIMITS.maxQueryChars + 8),
        fc.array(fc.record({ type: fc.constant('text'), text: text(40) })),
      ),
      k: fc.integer({ min: -2, max: 50 }),
      candidateK: fc.option(fc.integer({ min: 0, max: 5000 }), { nil: undefined }),
      filter: fc.option(
        fc.oneof(
          fc.integer({ min: 0, max: LIMITS.maxFilterDepth + 3 }).map(nested),
          fc.array(fc.string({ maxLength: 3 }), { maxLength: LIMITS.maxFilterNodes + 4 }).map((value) => ({
            field: 'lang',
            op: 'in',
            value,
          })),
          fc.jsonValue({ maxDepth: 6 }),
        ),
        { nil: undefined },
      ),
    });
    const embed = fc.record({ inputs: fc.array(text(30), { maxLength: 12 }) });
    const rerank = fc.record({
      query: text(80),
      passages: fc.array(text(20), { maxLength: 12 }),
      method: fc.constant('colbert'),
    });
    const add = fc.record({
      documents: fc.array(
        fc.record({
          id: fc.string({ minLength: 1, maxLength: 8 }),
          text: text(50),
          meta: fc.record({ year: fc.jsonValue() }),
        }),
        { maxLength: 3 },
      ),
    });
    const member = fc.oneof(
      retrieve.map((params) => ['retrieve', params] as const),
      embed.map((params) => ['embed', params] as const),
      rerank.map((params) => ['rerank', params] as const),
      add.map((params) => ['index/add', params] as const),
    );
    const expected = new Set([-32602, -32005, -32013, -32011]);
    await fc.assert(
      fc.asyncProperty(fc.array(member, { minLength: 1, maxLength: 8 }), async (members) => {
        const batch = members.map(([method, params]) => request(nextId++, method, params));
        const answer = await connection.exchange(batch.length === 1 ? batch[0]! : batch);
        for (const frame of [answer].flat()) {
          const error = failureOf(frame);
          if (error !== undefined) expect(expected, JSON.stringify(frame)).toContain(error.code);
        }
      }),
      { numRuns: 60 },
    );
    expect((await call('ping', {})).result).toEqual({});
  });
});
