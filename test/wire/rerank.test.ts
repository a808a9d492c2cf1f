import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { error } from '../helpers/frames.js';
import { connect, INITIALIZE, request, ROOT, TRANSPORTS, type Connection, type Frame } from '../helpers/wire.js';
import { writeFixture } from '../fixtures/bert-models.js';

const MODELS = mkdtempSync(join(tmpdir(), 'rcp-rerank-'));
writeFixture(join(MODELS, 'cross'), { kind: 'cross-encoder', maxTokens: 32 });
afterAll(() => rmSync(MODELS, { recursive: true, force: true }));

const DEFAULT_ENCODER_DIR = join(ROOT, 'models', 'use-lite');
const MAX_CANDIDATES = 6;
const PASSAGES = ['the cancer risk of the study', 'a mouse model', 'vitamin dose and blood levels', 'brain cells'];
type Ordering = { index: number; score: number }[];
type Rerank = { scores: number[]; order: number[]; results: Ordering; 'x-rcp-server-results': Ordering };
const result = (frame: Frame) => frame.result as Rerank;

describe.each(TRANSPORTS)('rerank over %s, with a generated cross-encoder (§7.6)', (transport) => {
  let client: Connection;
  let capabilities: Record<string, unknown>;
  let id = 0;
  const call = async (params: object) => (await client.exchange(request(++id, 'rerank', params))) as Frame;

  beforeAll(async () => {
    client = await connect(transport, {
      config: {
        'models.dir': MODELS,
        // The default encoder lives in the repository's models/, not in this test's model directory.
        'models.encoder': DEFAULT_ENCODER_DIR,
        'models.reranker': 'cross',
        'models.colbert': true,
        'models.rerankMaxCandidates': MAX_CANDIDATES,
      },
    });
    capabilities = ((await client.exchange(INITIALIZE())) as { result: { capabilities: Record<string, unknown> } })
      .result.capabilities;
  });
  afterAll(() => client.close());

  it('§6 advertises the methods that really run, maxCandidates and the model identities', () => {
    expect(capabilities.rerank).toEqual({
      methods: ['cross-encoder', 'colbert'],
      maxCandidates: MAX_CANDIDATES,
      models: [expect.stringMatching(/^test\/cross-encoder-1#[0-9a-f]{12}$/), expect.stringMatching(/^google\//)],
    });
  });

  it('§7.6 scores[i] belongs to passages[i]: each score equals that passage scored alone', async () => {
    const all = result(await call({ query: 'cancer risk', passages: PASSAGES }));
    expect(all.scores).toHaveLength(PASSAGES.length);
    for (const [i, passage] of PASSAGES.entries()) {
      const alone = result(await call({ query: 'cancer risk', passages: [passage] }));
      expect(alone.scores[0]).toBeCloseTo(all.scores[i]!, 5);
    }
  });

  it('§7.6 order is best-first and cut to topN; §6.2 x-rcp-server-results repeats it as {index, score}', async () => {
    const answer = result(await call({ query: 'cancer risk', passages: PASSAGES, topN: 2 }));
    const { scores, order, results } = answer;
    // The deprecated unprefixed name is still sent beside it for one release (docs/protocol.md).
    expect(answer['x-rcp-server-results']).toEqual(results);
    const best = [...scores.keys()].sort((a, b) => scores[b]! - scores[a]!);
    expect(order).toEqual(best.slice(0, 2));
    expect(results).toEqual(order.map((index) => ({ index, score: scores[index] })));
    expect(scores).toHaveLength(PASSAGES.length);
  });

  it('§17.2 carries usage: candidates and reranked counts and the latency', async () => {
    const answer = (await call({ query: 'cancer risk', passages: PASSAGES, topN: 2 })).result as {
      usage: { candidates: number; reranked: number; latencyMs: number };
    };
    expect(answer.usage).toMatchObject({ candidates: PASSAGES.length, reranked: PASSAGES.length });
    expect(answer.usage.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('accepts `documents` as a synonym of `passages`, and a Content block query', async () => {
    const viaPassages = result(await call({ query: 'cancer risk', passages: PASSAGES }));
    const viaDocuments = result(await call({ query: { type: 'text', text: 'cancer risk' }, documents: PASSAGES }));
    expect(viaDocuments.scores).toEqual(viaPassages.scores);
  });

  it('§7.5 method colbert scores by MaxSim (cosine) over the default encoder token vectors', async () => {
    // A passage identical to the query has identical token vectors: every query token finds cosine 1, the maximum.
    const passages = [...PASSAGES, 'cancer risk'];
    const { scores, order } = result(await call({ query: 'cancer risk', passages, method: 'colbert' }));
    expect(scores).toHaveLength(passages.length);
    expect(order[0]).toBe(passages.length - 1);
    const queryTokens = scores[passages.length - 1]!;
    expect(queryTokens).toBeCloseTo(Math.round(queryTokens), 4);
    for (const score of scores.slice(0, -1)) expect(score).toBeLessThan(queryTokens);
  });

  it.each([
    [
      '§7.6 -32005 for a method not in rerank.methods',
      { query: 'q', passages: ['a'], method: 'llm' },
      -32005,
      { option: 'method' },
    ],
    ['§7.6 -32602 for a method outside the enum of the schema', { query: 'q', passages: ['a'], method: 7 }, -32602, {}],
    ['-32602 without passages or documents', { query: 'q' }, -32602, { field: 'passages' }],
    ['-32602 for topN below 1', { query: 'q', passages: ['a'], topN: 0 }, -32602, { field: 'topN' }],
    [
      '§12 -32013 for more passages than rerank.maxCandidates',
      { query: 'q', passages: Array.from({ length: MAX_CANDIDATES + 1 }, () => 'p') },
      -32013,
      { field: 'passages' },
    ],
    [
      '§4.8 -32005 for an image passage',
      { query: 'q', passages: [{ type: 'image', uri: 'https://x/y.png', mimeType: 'image/png' }] },
      -32005,
      {},
    ],
  ])('%s', async (_name, params, code, data) => {
    const frame = await call(params);
    expect(error(frame).code).toBe(code);
    expect(error(frame).data).toMatchObject(data);
  });
});

describe('rerank is advertised only when something can rerank', () => {
  it('§6 by default: colbert over the default encoder (it helps on SciFact), no cross-encoder', async () => {
    const client = await connect('in-process', { config: { 'models.encoder': DEFAULT_ENCODER_DIR } });
    const init = (await client.exchange(INITIALIZE())) as { result: { capabilities: Record<string, unknown> } };
    expect(init.result.capabilities.rerank).toMatchObject({ methods: ['colbert'] });
    await client.close();
  });

  it('§6 no encoder and no reranker: nothing to advertise', async () => {
    const client = await connect('in-process', { config: { 'models.encoder': 'none', 'models.colbert': true } });
    const init = (await client.exchange(INITIALIZE())) as { result: { capabilities: Record<string, unknown> } };
    expect(init.result.capabilities.rerank).toBeUndefined();
    await client.close();
  });

  it('§6 a server with an encoder but no reranker and colbert turned off answers rerank with -32003', async () => {
    const client = await connect('in-process', { config: { 'models.encoder': 'use-lite', 'models.colbert': false } });
    const init = (await client.exchange(INITIALIZE())) as { result: { capabilities: Record<string, unknown> } };
    expect(init.result.capabilities.rerank).toBeUndefined();
    const frame = (await client.exchange(request(1, 'rerank', { query: 'q', passages: ['a'] }))) as Frame;
    expect(error(frame).code).toBe(-32003);
    await client.close();
  });
});
