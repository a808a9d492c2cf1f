import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, INITIALIZE, request, ROOT, TRANSPORTS, type Connection, type Frame } from '../helpers/wire.js';

/** §7.7 retrieve over every transport, on a small real corpus (the default encoder, the real indexes). */
const ENCODER = `${ROOT}/models/use-lite`;
const DAY = 86_400_000;
const iso = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY).toISOString();

const DOCUMENTS = [
  {
    id: 'zyx',
    text: 'Zyxtrophin is a rare protein found in the retina of owls.',
    meta: { lang: 'en', year: 2021, tags: ['biology', 'eyes'], source: 'handbook', title: 'Zyxtrophin' },
  },
  {
    id: 'heart-1',
    text: 'The heart pumps blood through the arteries and veins of the body.',
    meta: { lang: 'en', year: 2019, tags: ['medicine'], published: iso(400) },
  },
  {
    id: 'heart-2',
    text: 'The heart pumps blood through the veins and arteries of the body.',
    meta: { lang: 'en', year: 2023, tags: ['medicine'], published: iso(2) },
  },
  {
    id: 'heart-3',
    text: 'Blood is pumped by the heart through arteries and veins in the body.',
    meta: { lang: 'en', year: 2020, tags: ['medicine'] },
  },
  {
    id: 'lungs',
    text: 'The lungs move oxygen into the blood and carbon dioxide out of it.',
    meta: { lang: 'en', year: 2018, tags: ['medicine', 'breathing'] },
  },
  { id: 'de-1', text: 'Das Herz pumpt Blut durch den Körper.', meta: { lang: 'de', year: 2022, tags: ['medizin'] } },
  {
    id: 'de-2',
    text: 'Die Lunge versorgt das Blut mit Sauerstoff.',
    meta: { lang: 'de', year: 2017, tags: ['medizin'] },
  },
  { id: 'de-3', text: 'Das Gehirn steuert den Körper.', meta: { lang: 'de', year: 2016, tags: [] } },
  {
    id: 'stars',
    text: 'Stars form in clouds of gas and dust in galaxies far away.',
    meta: { lang: 'en', year: 2015, tags: ['astronomy'] },
  },
  {
    id: 'plants',
    text: 'Plants turn sunlight, water and carbon dioxide into sugar.',
    meta: { lang: 'en', year: 2024, tags: ['biology'] },
  },
];
const FIELDS = { lang: 'keyword', year: 'int', tags: 'keyword', published: 'date', source: 'keyword', title: 'text' };

type Hit = {
  id: string;
  score: number;
  scores: Record<string, number>;
  text?: string;
  vector?: number[];
  unit: string;
  chunk: { docId: string; index: number };
  citation: { source: string; title?: string };
  trust: { level: string };
};
type Result = {
  hits: Hit[];
  nextCursor?: string;
  indexVersion: string;
  usage: {
    candidates: number;
    reranked: number;
    latencyMs: number;
    notes?: string[];
    tokens?: number;
    'x-rcp-server-scoreScale'?: string;
  };
};

describe.each(TRANSPORTS)('retrieve over %s (§7.7)', (transport) => {
  let client: Connection;
  /** HTTP only: POST with Accept: text/event-stream through the connection's own server; every frame parsed. */
  const sse = async (params: object): Promise<Frame[]> => {
    const response = await fetch(`${client.origin!}/rcp/retrieve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(request(++id, 'retrieve', params)),
    });
    const text = await response.text();
    if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) return [JSON.parse(text) as Frame];
    return text
      .split('\n\n')
      .filter(Boolean)
      .map((event) => JSON.parse(event.slice('data: '.length)) as Frame);
  };
  let capabilities: Record<string, Record<string, unknown>>;
  let id = 0;
  const call = (params: object) => client.exchange(request(++id, 'retrieve', params)) as Promise<Frame>;
  const ok = async (params: object) => {
    const frame = await call(params);
    expect(frame.error, JSON.stringify(frame.error)).toBeUndefined();
    return frame.result as Result;
  };
  const fails = async (params: object) => {
    const frame = await call(params);
    expect(frame.error, JSON.stringify(frame).slice(0, 2_000)).toBeDefined();
    return frame.error as { code: number; data: Record<string, unknown> };
  };
  const docs = (result: Result) => result.hits.map((hit) => hit.chunk.docId);

  beforeAll(async () => {
    client = await connect(transport, {
      config: {
        'models.encoder': ENCODER,
        'index.fields': FIELDS,
        'retrieve.maxK': 20,
        'retrieve.trust': { handbook: 'trusted' },
      },
    });
    capabilities = ((await client.exchange(INITIALIZE())) as { result: { capabilities: typeof capabilities } }).result
      .capabilities;
    await client.exchange(request('seed', 'index/add', { documents: DOCUMENTS }));
  });
  afterAll(() => client.close());

  it('§6.1 advertises retrieve, filter fields as an object, citations, pagination, streaming and session', () => {
    expect(capabilities.retrieve).toMatchObject({
      modes: ['dense', 'sparse', 'hybrid'],
      fusion: ['rrf', 'weighted', 'convex'],
      defaultMode: 'hybrid',
      'x-rcp-server-sparse': 'bm25',
      maxK: 20,
      mmr: true,
      tokenBudget: true,
    });
    // §6.1 the default pipeline's scale (hybrid fusion: relative to the answer), and each mode's (§6.2 vendor field).
    expect(capabilities.retrieve?.scoreScale).toBe('unbounded');
    expect(capabilities.retrieve?.['x-rcp-server-scoreScales']).toEqual({
      dense: 'cosine',
      sparse: 'bm25',
      hybrid: 'unbounded',
    });
    // §6.1 the floor is known: cosine ≥ -1 bounds every score the pipeline makes (no cross-encoder configured).
    expect(capabilities.retrieve?.scoreFloor).toBe(-1);
    expect(capabilities.filter).toMatchObject({ fields: FIELDS });
    for (const key of ['citations', 'pagination', 'streaming', 'session']) expect(capabilities[key]).toBeDefined();
  });

  it('modes: sparse finds the exact rare term by BM25 alone; dense scores by cosine alone; hybrid carries both', async () => {
    const sparse = await ok({ query: 'zyxtrophin', k: 3, mode: 'sparse' });
    expect(sparse.hits[0]?.chunk.docId).toBe('zyx');
    expect(Object.keys(sparse.hits[0]!.scores)).toEqual(['sparse']);
    const dense = await ok({ query: 'zyxtrophin', k: 3, mode: 'dense' });
    expect(Object.keys(dense.hits[0]!.scores)).toEqual(['dense']);
    expect(dense.hits[0]!.score).toBeLessThanOrEqual(1);
    const hybrid = await ok({ query: 'zyxtrophin owls', k: 3 });
    expect(hybrid.hits[0]!.scores).toMatchObject({
      dense: expect.any(Number) as unknown,
      sparse: expect.any(Number) as unknown,
      fused: expect.any(Number) as unknown,
    });
  });

  it('§16.3 fusion: rrf scores are Σ 1/(rrfK + rank); convex α 1 is the dense order and α 0 the sparse order', async () => {
    const fused = await ok({ query: 'heart blood', k: 5, fusion: { method: 'rrf', rrfK: 10 } });
    expect(fused.hits[0]!.score).toBeLessThanOrEqual(2 / 11 + 1e-9);
    expect(fused.hits[0]!.score).toBeGreaterThan(1 / 11 - 1e-9);
    const dense = await ok({ query: 'heart blood', k: 5, mode: 'dense' });
    const sparse = await ok({ query: 'heart blood', k: 5, mode: 'sparse' });
    expect(docs(await ok({ query: 'heart blood', k: 5, fusion: { method: 'convex', alpha: 1 } }))).toEqual(docs(dense));
    expect(docs(await ok({ query: 'heart blood', k: 5, fusion: { method: 'convex', alpha: 0 } })).slice(0, 3)).toEqual(
      docs(sparse).slice(0, 3),
    );
    const weighted = await ok({
      query: 'heart blood',
      k: 5,
      fusion: { method: 'weighted', weights: { dense: 0, sparse: 1 } },
    });
    expect(weighted.hits[0]!.score).toBeCloseTo(1, 6);
  });

  it('§4.6 fusion weights whose sum overflows put no non-finite score on the wire, and rank as their ratio', async () => {
    const scoresOf = (result: Result) => result.hits.flatMap((hit) => [hit.score, ...Object.values(hit.scores)]);
    const fused = (method: string, weight: number) =>
      ok({ query: 'heart blood', k: 5, fusion: { method, weights: { dense: weight, sparse: weight } } });
    for (const method of ['weighted', 'rrf', 'convex']) {
      const huge = await fused(method, 1e308);
      const nonFinite = scoresOf(huge).filter((score) => !Number.isFinite(score));
      expect(nonFinite, `${method}: ${JSON.stringify(huge.hits)}`).toEqual([]);
      expect(docs(huge)).toEqual(docs(await fused(method, 1)));
    }
  });

  it('§3.3 the funnel: candidateK < k and topN < k are -32602; large values are clamped, never errors', async () => {
    expect(await fails({ query: 'q', k: 5, candidateK: 3 })).toMatchObject({
      code: -32602,
      data: { field: 'candidateK' },
    });
    expect(await fails({ query: 'q', k: 5, rerank: { method: 'colbert', topN: 2 } })).toMatchObject({
      code: -32602,
      data: { field: 'rerank.topN' },
    });
    const clamped = await ok({ query: 'blood', k: 10_000, candidateK: 1_000_000 });
    expect(clamped.hits.length).toBeLessThanOrEqual(20);
    expect(clamped.usage.candidates).toBeLessThanOrEqual(DOCUMENTS.length);
  });

  it('rerank inside retrieve: method colbert rescores the top topN; rerank false skips it; llm is -32005', async () => {
    const reranked = await ok({ query: 'heart pumps blood', k: 3, rerank: { method: 'colbert', topN: 5 } });
    expect(reranked.usage.reranked).toBe(5);
    expect(reranked.hits[0]!.scores.rerank).toBe(reranked.hits[0]!.score);
    const plain = await ok({ query: 'heart pumps blood', k: 3, rerank: false });
    expect(plain.usage.reranked).toBe(0);
    // §6.1 each answer states its scores' scale: rerank scores ahead of recall scores have none named.
    expect(reranked.usage['x-rcp-server-scoreScale']).toBe('unbounded');
    expect((await ok({ query: 'heart', k: 1, mode: 'dense' })).usage['x-rcp-server-scoreScale']).toBe('cosine');
    expect((await ok({ query: 'heart', k: 1, mode: 'sparse' })).usage['x-rcp-server-scoreScale']).toBe('bm25');
    expect(await fails({ query: 'q', k: 3, rerank: { method: 'llm' } })).toMatchObject({
      code: -32005,
      data: { option: 'rerank.method' },
    });
  });

  it('§7.7 strict: an unsupported mode is -32005; with strict false it falls back and says so in usage.notes', async () => {
    expect(await fails({ query: 'q', k: 3, mode: 'graph' })).toMatchObject({ code: -32005, data: { option: 'mode' } });
    const lenient = await ok({ query: 'blood', k: 3, mode: 'graph', strict: false });
    expect(lenient.hits.length).toBeGreaterThan(0);
    expect(lenient.usage.notes?.[0]).toMatch(/mode="graph"/);
  });

  it.each([
    ['rewrite', { rewrite: 'hyde' }, 'rewrite'],
    ['modality', { modality: 'image' }, 'modality'],
    ['level', { level: 2 }, 'level'],
    ['encoding', { includeVectors: true, encoding: 'f32-base64' }, 'encoding'],
    ['unit', { unit: 'community' }, 'unit'],
    ['fusion.method', { fusion: { method: 'magic' } }, 'fusion.method'],
    ['rerank.model', { rerank: { method: 'colbert', model: 'someone/else' } }, 'rerank.model'],
  ])('§7.7 strict: unsupported %s is -32005; strict false serves and notes it', async (_name, option, path) => {
    expect(await fails({ query: 'blood', k: 2, ...option })).toMatchObject({ code: -32005, data: { option: path } });
    const lenient = await ok({ query: 'blood', k: 2, ...option, strict: false });
    expect(lenient.hits.length).toBeGreaterThan(0);
    expect(lenient.usage.notes?.join(' ')).toContain(path);
  });

  it('mmr: a low lambda pushes near-duplicates down', async () => {
    const plain = await ok({ query: 'the heart pumps blood through arteries and veins', k: 3, mode: 'dense' });
    const diverse = await ok({
      query: 'the heart pumps blood through arteries and veins',
      k: 3,
      mode: 'dense',
      mmr: { lambda: 0.2 },
    });
    const duplicates = (result: Result) => docs(result).filter((doc) => doc.startsWith('heart')).length;
    expect(duplicates(plain)).toBe(3);
    expect(duplicates(diverse)).toBeLessThan(3);
  });

  it('§8 filters apply during recall: a selective filter still returns k hits when k exist', async () => {
    const german = await ok({ query: 'heart', k: 3, filter: { field: 'lang', op: 'eq', value: 'de' } });
    expect(docs(german).sort()).toEqual(['de-1', 'de-2', 'de-3']);
    const nested = await ok({
      query: 'blood',
      k: 10,
      filter: {
        and: [
          { field: 'tags', op: 'contains', value: 'medicine' },
          {
            or: [
              { field: 'year', op: 'gte', value: 2020 },
              { not: { field: 'published', op: 'exists', value: false } },
            ],
          },
        ],
      },
    });
    expect(docs(nested).sort()).toEqual(['heart-1', 'heart-2', 'heart-3']);
    const excluded = await ok({
      query: 'blood',
      k: 10,
      filter: { field: 'year', op: 'nin', value: [2019, 2023, 2020, 2018, 2022, 2017] },
    });
    expect(docs(excluded).sort()).toEqual(['de-3', 'plants', 'stars', 'zyx']);
  });

  it.each([
    ['an unadvertised field', { field: 'colour', op: 'eq', value: 'red' }, -32602, { field: 'filter.colour' }],
    ['a value of the wrong type', { field: 'year', op: 'gte', value: 'recent' }, -32602, { field: 'filter.year' }],
    ['an ordered operator on a keyword', { field: 'lang', op: 'gt', value: 'a' }, -32602, { field: 'filter.lang' }],
    ['an empty and', { and: [] }, -32602, { field: 'filter.and' }],
    ['an unadvertised operator', { field: 'lang', op: 'regex', value: 'e.' }, -32005, { option: 'filter.op' }],
    [
      'nesting past the bound',
      JSON.parse(`${'{"not":'.repeat(20)}{"field":"lang","op":"eq","value":"en"}${'}'.repeat(20)}`) as object,
      -32602,
      {},
    ],
  ])('§8 %s is rejected precisely', async (_name, filter, code, data) => {
    expect(await fails({ query: 'q', k: 3, filter })).toMatchObject({ code, data });
  });

  it('minScore drops weaker hits; recency favours the recent of two equal documents', async () => {
    const all = await ok({ query: 'blood', k: 10, mode: 'dense' });
    const floor = all.hits[2]!.score;
    const strong = await ok({ query: 'blood', k: 10, mode: 'dense', minScore: floor });
    expect(strong.hits.length).toBe(3);
    const recent = await ok({
      query: 'heart pumps blood through veins and arteries',
      k: 3,
      mode: 'sparse',
      filter: { field: 'published', op: 'exists', value: true },
      recency: { field: 'published', halfLifeDays: 30 },
    });
    expect(docs(recent)[0]).toBe('heart-2');
    expect(recent.hits[0]!.scores.recency).toBeGreaterThan(recent.hits[1]!.scores.recency ?? 1);
    expect(await fails({ query: 'q', k: 3, recency: { field: 'year', halfLifeDays: 30 } })).toMatchObject({
      code: -32602,
      data: { field: 'recency.field' },
    });
  });

  it('includeText, includeVectors, unit, citation, chunk and trust shape each hit', async () => {
    const lean = await ok({ query: 'zyxtrophin', k: 1, mode: 'sparse', includeText: false, includeVectors: true });
    expect(lean.hits[0]!.text).toBeUndefined();
    expect(lean.hits[0]!.vector).toHaveLength(512);
    expect(lean.hits[0]).toMatchObject({
      id: 'zyx#0',
      unit: 'chunk',
      chunk: { docId: 'zyx', index: 0 },
      citation: { source: 'handbook', title: 'Zyxtrophin', start: 0, end: DOCUMENTS[0]!.text.length },
      // Configured `trusted`, but written by a client over the wire: capped at community (§15.2).
      trust: { level: 'community' },
    });
    const byDocument = await ok({ query: 'blood', k: 5, unit: 'document' });
    expect(byDocument.hits.every((hit) => hit.id === hit.chunk.docId && hit.unit === 'document')).toBe(true);
    const other = await ok({ query: 'stars', k: 1, mode: 'sparse' });
    expect(other.hits[0]!.trust.level).toBe('untrusted');
  });

  it('§7.7.2 tokenBudget packs the best hits that fit and reports usage.tokens', async () => {
    const packed = await ok({ query: 'blood', k: 10, tokenBudget: 30 });
    expect(packed.usage.tokens).toBeLessThanOrEqual(30);
    expect(packed.hits.length).toBeGreaterThan(0);
    expect(packed.hits.length).toBeLessThan(10);
  });

  it('§7.7.1 the same request on the same indexVersion returns identical results; a pin to no version held is -32010', async () => {
    const first = await ok({ query: 'oxygen in the blood', k: 5 });
    const again = await ok({ query: 'oxygen in the blood', k: 5 });
    expect(again.hits).toEqual(first.hits);
    // A version no process has reached: retryable, whatever its size.
    for (const indexVersion of ['9007199254740993', '99999999999999999999999']) {
      expect(await fails({ query: 'q', k: 3, indexVersion })).toMatchObject({
        code: -32010,
        data: { retryable: true },
      });
    }
    for (const indexVersion of ['v1', '01', '-1', '1e3']) {
      expect(await fails({ query: 'q', k: 3, indexVersion })).toMatchObject({
        code: -32010,
        data: { retryable: false },
      });
    }
    // Version 0, before the first write, is in the window (snapshots): the empty corpus.
    expect(await ok({ query: 'oxygen', k: 3, indexVersion: '0' })).toMatchObject({ hits: [], indexVersion: '0' });
    expect((await ok({ query: 'q', k: 1, indexVersion: first.indexVersion })).indexVersion).toBe(first.indexVersion);
    // §7.7.1 a seed scores the dense list exactly (in float64): the same hits as the ANN search finds at this size, with
    // scores equal to float32's precision, and identical from one seeded request to the next.
    const seeded = await ok({ query: 'oxygen in the blood', k: 5, seed: 7 });
    expect((await ok({ query: 'oxygen in the blood', k: 5, seed: 7 })).hits).toEqual(seeded.hits);
    expect(seeded.hits.map((hit) => hit.id)).toEqual(first.hits.map((hit) => hit.id));
    seeded.hits.forEach((hit, i) => expect(hit.score).toBeCloseTo(first.hits[i]!.score, 6));
    expect(seeded.usage.notes?.[0]).toMatch(/^seed: the dense list was scored exactly/);
  });

  it('§10 pagination: cursors walk every hit once; a forged cursor is -32602', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page: Result = await ok({
        query: 'blood',
        k: 3,
        candidateK: 10,
        mode: 'sparse',
        ...(cursor === undefined ? {} : { cursor }),
      });
      seen.push(...page.hits.map((hit) => hit.id));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    const everything = await ok({ query: 'blood', k: 10, candidateK: 10, mode: 'sparse' });
    expect(seen).toEqual(everything.hits.map((hit) => hit.id));
    const first = await ok({ query: 'blood', k: 2, mode: 'sparse' });
    const forged = `${first.nextCursor!.slice(0, -3)}abc`;
    expect(await fails({ query: 'blood', k: 2, mode: 'sparse', cursor: forged })).toMatchObject({
      code: -32602,
      data: { field: 'cursor' },
    });
    expect(await fails({ query: 'other', k: 2, mode: 'sparse', cursor: first.nextCursor })).toMatchObject({
      code: -32602,
    });
  });

  it('§10 a cursor continues its request whatever unknown fields ride along (§7.7: ignored, so not part of it)', async () => {
    const first = await ok({ query: 'blood', k: 2, mode: 'sparse', 'x-unknown': 'a'.repeat(100_000) });
    const next = await ok({ query: 'blood', k: 2, mode: 'sparse', 'x-other': [1, 2, 3], cursor: first.nextCursor });
    const plain = await ok({ query: 'blood', k: 4, mode: 'sparse' });
    expect([...first.hits, ...next.hits].map((hit) => hit.id)).toEqual(plain.hits.map((hit) => hit.id));
  });

  it('§15.5 option names are short: one of 65 characters is -32602 naming it', async () => {
    for (const [params, field] of [
      [{ mode: 'm'.repeat(65) }, 'mode'],
      [{ fusion: { method: 'f'.repeat(65) } }, 'fusion.method'],
      [{ indexVersion: '9'.repeat(65) }, 'indexVersion'],
      [
        { fusion: { weights: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`w${i}`, 1])) } },
        'fusion.weights',
      ],
    ] as const) {
      expect(await fails({ query: 'blood', k: 2, ...params })).toMatchObject({ code: -32602, data: { field } });
    }
  });

  it('§7.7.3 sessionId: hits already returned in the session are not returned again', async () => {
    const first = await ok({ query: 'blood', k: 3, sessionId: `s-${transport}` });
    const second = await ok({ query: 'blood', k: 3, sessionId: `s-${transport}` });
    const overlap = second.hits.filter((hit) => first.hits.some((earlier) => earlier.id === hit.id));
    expect(overlap).toEqual([]);
    expect(second.hits.length).toBe(3);
  });

  it('§10 §7.7.3 pagination with sessionId walks every hit once, skipping only what the session saw before', async () => {
    const session = `paged-${transport}`;
    const params = { query: 'blood', k: 2, candidateK: 10, mode: 'sparse', sessionId: session };
    const before = await ok({ query: 'blood', k: 1, candidateK: 10, mode: 'sparse', sessionId: session });
    const pages: string[] = [];
    let cursor: string | undefined;
    do {
      const page: Result = await ok({ ...params, ...(cursor === undefined ? {} : { cursor }) });
      pages.push(...page.hits.map((hit) => hit.id));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    const everything = await ok({ query: 'blood', k: 10, candidateK: 10, mode: 'sparse' });
    const expected = everything.hits.map((hit) => hit.id).filter((hit) => hit !== before.hits[0]?.id);
    expect(pages).toEqual(expected);
  });

  it('§9 progress at each stage with partial hits after recall, only with a progressToken (SSE over HTTP)', async () => {
    type Progress = {
      method?: string;
      params: { progressToken: string; stage: string; partial?: { hits: unknown[] } };
    };
    const params = {
      query: 'blood',
      k: 3,
      rerank: { method: 'colbert', topN: 5 },
      _meta: { progressToken: `p-${transport}` },
    };
    const progressOf = async (body: object): Promise<Progress[]> => {
      if (transport === 'http')
        return (await sse(body)).filter((frame) => frame.method === 'notifications/progress') as Progress[];
      const before = client.notifications.length;
      await ok(body);
      return client.notifications.slice(before) as Progress[];
    };
    const frames = await progressOf(params);
    expect(frames.map((frame) => frame.params.stage)).toEqual(['recall', 'fuse', 'rerank', 'pack']);
    expect(frames.every((frame) => frame.params.progressToken === `p-${transport}`)).toBe(true);
    expect(frames[0]!.params.partial?.hits.length).toBe(3);
    expect(await progressOf({ query: 'blood', k: 3 })).toEqual([]);
  });

  it('§10 a cursor issued before a write has expired: -32015', async () => {
    const page = await ok({ query: 'blood', k: 2, mode: 'sparse' });
    await client.exchange(request(`w-${id}`, 'index/add', { documents: [{ id: `late-${id}`, text: 'more blood' }] }));
    expect(await fails({ query: 'blood', k: 2, mode: 'sparse', cursor: page.nextCursor })).toMatchObject({
      code: -32015,
    });
  });
});

/** §7.14 over the transports whose connection carries notifications both ways (HTTP cancellation is in http.test). */
describe.each(['in-process', 'stdio'] as const)('retrieve cancellation over %s', (transport) => {
  let client: Connection;
  beforeAll(async () => {
    client = await connect(transport, { config: { 'models.encoder': ENCODER, 'index.fields': FIELDS } });
    await client.exchange(INITIALIZE());
    await client.exchange(request('seed', 'index/add', { documents: DOCUMENTS }));
  });
  afterAll(() => client.close());

  it('§7.14 a cancel after recall stops the pipeline: -32006, no later stage runs', async () => {
    const before = client.notifications.length;
    const requestId = `cancel-${transport}`;
    client.send(
      request(requestId, 'retrieve', {
        query: 'heart blood lungs',
        k: 3,
        rerank: { method: 'colbert', topN: 10 },
        _meta: { progressToken: requestId },
      }),
    );
    const deadline = Date.now() + 10_000;
    while (client.notifications.length === before && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 1));
    client.send({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id: requestId } });
    const reply = await client.reply(requestId);
    expect((reply.error as { code: number }).code).toBe(-32006);
    const stages = (client.notifications.slice(before) as { params: { stage: string } }[]).map(
      (frame) => frame.params.stage,
    );
    expect(stages).not.toContain('pack');
  });
});
