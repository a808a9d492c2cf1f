import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { error } from '../helpers/frames.js';
import { connect, INITIALIZE, request, ROOT, TRANSPORTS, type Connection, type Frame } from '../helpers/wire.js';

/** §7.5 embed/multi over every transport, with the default encoder's token vectors and the real MaxSim kernel. */
const ENCODER = `${ROOT}/models/use-lite`;
const BATCH_LIMIT = 8;
/** Small enough that eight long inputs are refused (~12 MB), large enough for one chunk of 128 tokens (~1.5 MB). */
const MAX_RESPONSE_BYTES = 2_000_000;
const QUERY = 'how does the heart move blood';
const PASSAGES = [
  'The heart pumps blood through the arteries and veins of the body.',
  'Owls hunt at night; they see well in the dark.',
  'Die Lunge versorgt das Blut mit Sauerstoff.',
  'Stars form in clouds of gas and dust, café ﬁne — x².',
];

type Multi = { matrices: number[][][]; dimension: number; 'x-rcp-server-offsets'?: [number, number][][] };
type Progress = { method?: string; params: { progressToken: string; stage: string; progress: number } };

function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}

/** §7.5 MaxSim as a client computes it: Σ over query rows of the best cosine against any document row. */
function maxSim(query: readonly number[][], document: readonly number[][]): number {
  return query.reduce((sum, q) => sum + Math.max(...document.map((d) => cosine(q, d))), 0);
}

describe.each(TRANSPORTS)('embed/multi over %s (§7.5)', (transport) => {
  let client: Connection;
  let capabilities: Record<string, unknown>;
  let id = 0;
  const call = async (method: string, params: object) =>
    (await client.exchange(request(++id, method, params))) as Frame;
  const multi = async (params: object) => {
    const frame = await call('embed/multi', params);
    expect(frame.error, JSON.stringify(frame.error)).toBeUndefined();
    return frame.result as Multi;
  };

  beforeAll(async () => {
    client = await connect(transport, {
      config: {
        'models.encoder': ENCODER,
        'models.colbert': true,
        'models.embedBatchLimit': BATCH_LIMIT,
        'limits.maxResponseBytes': MAX_RESPONSE_BYTES,
      },
    });
    const init = (await client.exchange(INITIALIZE())) as Frame;
    capabilities = (init.result as { capabilities: Record<string, unknown> }).capabilities;
  });
  afterAll(() => client.close());

  it('§6 advertises multiVector: the dimension, the identity and cosine, what the colbert MaxSim computes', () => {
    expect(capabilities.multiVector).toEqual({
      dimension: 512,
      identity: expect.stringMatching(/^google\/universal-sentence-encoder-lite#[0-9a-f]{12}$/) as unknown,
      similarity: 'cosine',
    });
  });

  it("§7.5 one matrix per input, a row of `dimension` floats per token, with each row's span of the input", async () => {
    const result = await multi({ inputs: ['hello world', { type: 'text', text: PASSAGES[3] }], kind: 'document' });
    expect(result.dimension).toBe(512);
    expect(result.matrices).toHaveLength(2);
    const offsets = result['x-rcp-server-offsets']!;
    expect(offsets.map((rows) => rows.length)).toEqual(result.matrices.map((rows) => rows.length));
    expect(result.matrices.flat().every((row) => row.length === 512)).toBe(true);
    expect(offsets[0]!.map(([start, end]) => 'hello world'.slice(start, end))).toEqual(['hell', 'o', 'world']);
    const spans = offsets[1]!.map(([start, end]) => PASSAGES[3]!.slice(start, end));
    expect(spans).toContain('café'.slice(-1));
    expect(spans.join('')).toBe(PASSAGES[3]!.replace(/ /g, ''));
  });

  it('§7.5 MaxSim over the matrices (query kind "query", passages "document") is rerank colbert\'s score', async () => {
    const [query] = (await multi({ inputs: [QUERY], kind: 'query' })).matrices;
    const documents = (await multi({ inputs: PASSAGES, kind: 'document' })).matrices;
    const rerank = await call('rerank', { query: QUERY, passages: PASSAGES, method: 'colbert' });
    const { scores } = rerank.result as { scores: number[] };
    documents.forEach((document, i) => expect(Math.abs(maxSim(query!, document) - scores[i]!)).toBeLessThan(1e-4));
    // The best passage is the one about the heart.
    expect(scores.indexOf(Math.max(...scores))).toBe(0);
  });

  it("§7.5 token offsets align with chunk boundaries: a chunk's rows map onto its citation.start/end", async () => {
    const paragraph = (topic: string) => `${`The ${topic} works hard every day and night. `.repeat(40)}\n\n`;
    const document = `${paragraph('heart')}${paragraph('liver')}${paragraph('kidney')}`;
    const added = await call('index/add', { documents: [{ id: `long-${transport}`, text: document }], chunk: true });
    expect((added.result as { chunks: number }).chunks).toBeGreaterThan(1);
    const found = await call('retrieve', { query: 'kidney', k: 1, mode: 'sparse', includeText: true });
    const [hit] = (found.result as { hits: { text: string; citation: { start: number; end: number } }[] }).hits;
    const { start, end } = hit!.citation;
    expect(start).toBeGreaterThan(0);
    const [spans] = (await multi({ inputs: [hit!.text], kind: 'document' }))['x-rcp-server-offsets']!;
    for (const [from, to] of spans!) {
      expect(start + to).toBeLessThanOrEqual(end);
      expect(document.slice(start + from, start + to)).toBe(hit!.text.slice(from, to));
    }
    expect(spans!.map(([from, to]) => document.slice(start + from, start + to)).join('')).toContain('Thekidneyworks');
  });

  it('§7.3 accepts the legacy `texts`; an empty batch is no matrices', async () => {
    const legacy = await multi({ texts: ['hello world'] });
    const current = await multi({ inputs: ['hello world'] });
    expect(legacy.matrices).toEqual(current.matrices);
    expect((await multi({ inputs: [] })).matrices).toEqual([]);
  });

  it.each([
    [
      '§7.3.1 -32005 for f32-base64: the normative MultiVectorResult carries JSON numbers only',
      { inputs: ['x'], encoding: 'f32-base64' },
      -32005,
      { option: 'encoding' },
    ],
    ['§7.5 -32602 when neither inputs nor texts is given', { kind: 'query' }, -32602, { field: 'inputs' }],
    ['§4.8 -32005 for a non-text block', { inputs: [{ type: 'image', data: 'AAAA' }] }, -32005, {}],
    [
      '§12 -32013 for more inputs than embed.batchLimit',
      { inputs: Array.from({ length: BATCH_LIMIT + 1 }, () => 'x') },
      -32013,
      { field: 'inputs', retryable: false },
    ],
    [
      '§15.5 -32013 for matrices that would pass limits.maxResponseBytes, before the model runs',
      { inputs: Array.from({ length: BATCH_LIMIT }, (_, i) => `${i} ${PASSAGES.join(' ').repeat(4)}`) },
      -32013,
      { retryable: false },
    ],
  ])('%s', async (_name, params, code, data) => {
    const frame = await call('embed/multi', params);
    expect(error(frame).code).toBe(code);
    expect(error(frame).data).toMatchObject(data);
  });

  it('§9 progress per model batch, stage embed, only with a progressToken (SSE over HTTP)', async () => {
    const progressOf = async (method: string, params: object): Promise<Progress[]> => {
      if (transport === 'http') {
        const response = await fetch(`${client.origin!}/rcp/${method}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
          body: JSON.stringify(request(++id, method, params)),
        });
        const events = (await response.text()).split('\n\n').filter(Boolean);
        const frames = events.map((event) => JSON.parse(event.slice('data: '.length)) as Progress);
        return frames.filter((frame) => frame.method === 'notifications/progress');
      }
      const before = client.notifications.length;
      expect((await call(method, params)).error).toBeUndefined();
      return client.notifications.slice(before) as Progress[];
    };
    for (const method of ['embed/multi', 'embed']) {
      const frames = await progressOf(method, { inputs: PASSAGES, _meta: { progressToken: `${method}-${transport}` } });
      expect(frames.length).toBeGreaterThan(0);
      expect(frames.every((frame) => frame.params.stage === 'embed')).toBe(true);
      expect(frames.every((frame) => frame.params.progressToken === `${method}-${transport}`)).toBe(true);
      expect(frames.at(-1)!.params.progress).toBe(1);
      expect(await progressOf(method, { inputs: PASSAGES })).toEqual([]);
    }
    const reranked = await progressOf('rerank', {
      query: QUERY,
      passages: PASSAGES,
      method: 'colbert',
      _meta: { progressToken: 7 },
    });
    expect(reranked.map((frame) => frame.params.stage)).toContain('rerank');
    expect(reranked.at(-1)!.params.progress).toBe(1);
  });
});

describe('embed/multi without an encoder', () => {
  it('§6 is neither advertised nor served: -32003', async () => {
    const client = await connect('in-process');
    const init = (await client.exchange(INITIALIZE())) as Frame;
    expect((init.result as { capabilities: Record<string, unknown> }).capabilities).not.toHaveProperty('multiVector');
    const frame = (await client.exchange(request(1, 'embed/multi', { inputs: ['x'] }))) as Frame;
    expect(error(frame).code).toBe(-32003);
    await client.close();
  });
});
