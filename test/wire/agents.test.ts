import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { damerauLevenshtein } from '../../src/lexical/query-transform.js';
import { connect, INITIALIZE, request, ROOT, TRANSPORTS, type Connection, type Frame } from '../helpers/wire.js';

/**
 * For agentic loops, over every transport: `query/transform` (§7.8) with the two methods that run without a language
 * model, `retrieve` with `rewrite`, and `feedback` (§7.16) — recorded, counted, flags logged for review, and never a
 * change to any retrieve.
 */
const DOCUMENTS = [
  {
    id: 'statin',
    text: 'Statins lower cholesterol and reduce the risk of cardiovascular events in adults.',
    meta: { source: 'trial' },
  },
  {
    id: 'aspirin',
    text: 'Aspirin reduces the risk of heart attack; cholesterol levels are unchanged.',
    meta: { source: 'trial' },
  },
  {
    id: 'exercise',
    text: 'Regular exercise lowers blood pressure and improves cardiovascular health.',
    meta: { source: 'blog' },
  },
  { id: 'diet', text: 'A diet rich in fibre lowers cholesterol over several months.', meta: { source: 'blog' } },
];
const FIELDS = { source: 'keyword' };

describe.each(TRANSPORTS)('agents over %s', (transport) => {
  let client: Connection;
  let capabilities: Record<string, Record<string, unknown>>;
  let id = 0;
  const call = (method: string, params: object): Promise<Frame> => {
    const mine = ++id;
    client.send(request(mine, method, params));
    return client.reply(mine);
  };

  beforeAll(async () => {
    client = await connect(transport, {
      config: { 'models.encoder': `${ROOT}/models/use-lite`, 'index.fields': FIELDS },
    });
    capabilities = ((await client.exchange(INITIALIZE())) as { result: { capabilities: typeof capabilities } }).result
      .capabilities;
    await call('index/add', { documents: DOCUMENTS });
  });
  afterAll(() => client.close());

  it('advertises only the transform methods that run, and feedback', () => {
    expect(capabilities.transform).toEqual({ methods: ['rewrite', 'multi-query'], 'x-rcp-server-maxQueries': 8 });
    expect(capabilities.feedback).toEqual({});
  });

  it('rewrite normalises and adds the corpus spelling of a misspelt word beside it', async () => {
    const answer = (await call('query/transform', { query: '  do  cholesterl\u00a0drugs work? ', method: 'rewrite' }))
      .result as { queries: string[] };
    expect(answer.queries).toEqual(['do cholesterl drugs work? cholesterol']);
    const clean = (await call('query/transform', { query: 'aspirin and the heart', method: 'rewrite' })).result;
    expect(clean).toEqual({ queries: ['aspirin and the heart'] });
  });

  it('multi-query returns n distinct queries: the original, then pseudo-relevance expansions from the corpus', async () => {
    const { queries } = (await call('query/transform', { query: 'cholesterol', method: 'multi-query', n: 3 }))
      .result as { queries: string[] };
    expect(queries[0]).toBe('cholesterol');
    expect(queries.length).toBeGreaterThan(1);
    expect(new Set(queries).size).toBe(queries.length);
    for (const query of queries.slice(1)) expect(query.startsWith('cholesterol ')).toBe(true);
    // Expansion words come from the documents that mention cholesterol.
    const words = queries.slice(1).flatMap((query) => query.split(' ').slice(1));
    const vocabulary = new Set(
      DOCUMENTS.filter((d) => d.text.includes('cholesterol')).flatMap((d) => d.text.toLowerCase().match(/[a-z]+/g)),
    );
    for (const word of words) expect(vocabulary.has(word), word).toBe(true);
  });

  it('refuses methods that need a language model (-32005) and a fan-out past its bound (-32602)', async () => {
    expect(((await call('query/transform', { query: 'x', method: 'hyde' })).error as { code: number }).code).toBe(
      -32005,
    );
    expect(
      ((await call('query/transform', { query: 'x', method: 'multi-query', n: 50 })).error as { code: number }).code,
    ).toBe(-32602);
  });

  it('retrieve with rewrite recalls with the rewritten query and says so', async () => {
    const answer = (await call('retrieve', { query: 'asprin', k: 1, rewrite: 'rewrite', mode: 'sparse' })).result as {
      hits: { id: string }[];
      rewrittenQuery: string;
    };
    expect(answer.rewrittenQuery).toBe('asprin aspirin');
    expect(answer.hits[0]?.id).toBe('aspirin#0');
    const multi = (await call('retrieve', { query: 'cholesterol', k: 2, rewrite: 'multi-query' })).result as {
      hits: unknown[];
      usage: { notes: string[] };
    };
    expect(multi.hits).toHaveLength(2);
    expect(multi.usage.notes[0]).toMatch(/^multi-query: lexical recall expanded to "cholesterol \w+/);
  });

  it('feedback counts signals and never changes a retrieve, even one running concurrently', async () => {
    const ask = { query: 'cholesterol treatment', k: 4 };
    const before = (await call('retrieve', ask)).result as { hits: { id: string; score: number }[] };
    const signals = before.hits.map((hit, i) => ({
      hitId: hit.id,
      used: i < 2,
      helpful: i === 0,
      reward: i === 0 ? 1 : -0.5,
    }));
    const [during, recorded] = await Promise.all([
      call('retrieve', ask),
      call('feedback', { sessionId: 's1', query: ask.query, signals }),
    ]);
    expect(recorded.result).toEqual({ accepted: 4 });
    const after = (await call('retrieve', ask)).result as { hits: unknown[] };
    expect((during.result as { hits: unknown[] }).hits).toEqual(before.hits);
    expect(after.hits).toEqual(before.hits);
  });

  it('feedback flags go to review; malformed feedback is -32602', async () => {
    const flagged = await call('feedback', {
      signals: [
        { hitId: 'diet#0', poisonSuspected: true },
        { hitId: 7, injectionSuspected: true },
      ],
    });
    expect(flagged.result).toEqual({ accepted: 2 });
    expect(((await call('feedback', { signals: [{ hitId: 'x', reward: 3 }] })).error as { code: number }).code).toBe(
      -32602,
    );
    expect(((await call('feedback', { signals: [{ used: true }] })).error as { code: number }).code).toBe(-32602);
  });
});

describe('edit distance', () => {
  it('counts a transposition as one edit and gives up past its limit', () => {
    expect(damerauLevenshtein('aspirin', 'asprin', 2)).toBe(1);
    expect(damerauLevenshtein('cholesterol', 'cholestreol', 2)).toBe(1);
    expect(damerauLevenshtein('abc', 'xyz', 1)).toBe(2);
  });
});
