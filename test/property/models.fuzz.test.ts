import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import type { Session } from '../../src/protocol/session.js';
import { HuggingFaceTokenizer } from '../../src/models/tokenizers/huggingface.js';
import { SentencePieceTokenizer, type Vocabulary } from '../../src/models/tokenizers/sentencepiece.js';
import { writeFixture } from '../fixtures/bert-models.js';
import { assertValidFrame } from '../helpers/schema.js';
import type { ConfigOverrides } from '../../src/config/index.js';
import { INITIALIZE, ROOT, request, testConfig } from '../helpers/wire.js';

/** Bad input gets a precise error and leaves nothing broken: embed and rerank params, and both tokenizers. */
const MODELS = mkdtempSync(join(tmpdir(), 'rcp-fuzz-'));
writeFixture(join(MODELS, 'encoder'), { kind: 'encoder', maxTokens: 24 });
writeFixture(join(MODELS, 'cross'), { kind: 'cross-encoder', maxTokens: 24 });
afterAll(() => rmSync(MODELS, { recursive: true, force: true }));
const EXPECTED = new Set([-32602, -32005, -32013]);

const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }));
const block = fc.record(
  {
    type: fc.oneof(fc.constantFrom('text', 'image', 'audio', 'blob'), fc.string()),
    text: fc.jsonValue(),
    mimeType: fc.string(),
    uri: fc.string(),
  },
  { requiredKeys: [] },
);
const inputs = fc.oneof(fc.array(fc.oneof(text, block), { maxLength: 6 }), fc.jsonValue());
const embedParams = fc.record(
  {
    inputs,
    texts: inputs,
    kind: fc.oneof(fc.constantFrom('query', 'document'), fc.jsonValue()),
    encoding: fc.oneof(fc.constantFrom('json', 'f32-base64'), fc.jsonValue()),
  },
  { requiredKeys: [] },
);
const rerankParams = fc.record(
  {
    query: fc.oneof(text, block, fc.array(block, { maxLength: 3 }), fc.jsonValue()),
    passages: inputs,
    documents: inputs,
    method: fc.oneof(fc.constantFrom('cross-encoder', 'colbert', 'llm'), fc.jsonValue()),
    topN: fc.oneof(fc.integer({ min: -2, max: 8 }), fc.jsonValue()),
  },
  { requiredKeys: [] },
);

/** One in-process server per describe block, over the generated models in MODELS. */
function fuzzedServer(overrides: ConfigOverrides): { app: App; session: Session; nextId: () => number } {
  let id = 0;
  const server = { app: undefined as unknown as App, session: undefined as unknown as Session, nextId: () => ++id };
  beforeAll(async () => {
    server.app = createApp(testConfig({ 'models.dir': MODELS, 'models.encoder': 'encoder', ...overrides }));
    server.session = server.app.createSession();
    await server.session.handle(INITIALIZE());
  });
  afterAll(() => server.app.close());
  return server;
}

describe('fuzzed embed and rerank params (§14.1 item 5)', () => {
  const server = fuzzedServer({
    'models.reranker': 'cross',
    'models.embedBatchLimit': 4,
    'models.rerankMaxCandidates': 4,
  });

  const answersPrecisely = (method: string) => async (params: unknown) => {
    const reply = (await server.session.handle(request(server.nextId(), method, params as object))) as {
      result?: unknown;
      error?: { code: number };
    };
    assertValidFrame(JSON.parse(JSON.stringify(reply)), method);
    if (reply.error !== undefined) expect(EXPECTED, JSON.stringify(reply.error)).toContain(reply.error.code);
  };

  it('embed: a valid result or -32602/-32005/-32013, never anything else', async () => {
    await fc.assert(fc.asyncProperty(embedParams, answersPrecisely('embed')), { numRuns: 200 });
  });

  it('rerank: a valid result or -32602/-32005/-32013, never anything else', async () => {
    await fc.assert(fc.asyncProperty(rerankParams, answersPrecisely('rerank')), { numRuns: 200 });
  });

  it('still embeds afterwards', async () => {
    const reply = (await server.session.handle(
      request(server.nextId(), 'embed', { inputs: ['the cell'] }),
    )) as unknown as {
      result: { vectors: number[][] };
    };
    expect(reply.result.vectors[0]).toHaveLength(32);
  });
});

const indexAddParams = fc.record(
  {
    documents: fc.oneof(
      fc.array(
        fc.record(
          {
            id: fc.oneof(fc.string({ maxLength: 8 }), fc.jsonValue()),
            text: fc.oneof(text, fc.jsonValue()),
            meta: fc.oneof(
              fc.record({ year: fc.jsonValue(), source: fc.jsonValue() }, { requiredKeys: [] }),
              fc.jsonValue(),
            ),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 5 },
      ),
      fc.jsonValue(),
    ),
    chunk: fc.oneof(fc.boolean(), fc.jsonValue()),
    contextual: fc.oneof(fc.boolean(), fc.jsonValue()),
  },
  { requiredKeys: [] },
);

describe('fuzzed index/add and index/delete (bad input never leaves the corpus half-written)', () => {
  const server = fuzzedServer({ 'index.fields': { year: 'int', source: 'keyword' }, 'index.maxDocumentsPerAdd': 4 });

  it('answers a result or -32602/-32013, and store, dense and lexical counts always agree', async () => {
    await fc.assert(
      fc.asyncProperty(indexAddParams, fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }), async (params, ids) => {
        const reply = (await server.session.handle(request(server.nextId(), 'index/add', params))) as {
          error?: { code: number };
        };
        assertValidFrame(JSON.parse(JSON.stringify(reply)), 'index/add');
        if (reply.error !== undefined) expect(EXPECTED, JSON.stringify(reply.error)).toContain(reply.error.code);
        await server.session.handle(request(server.nextId(), 'index/delete', { ids }));
        const stats = await server.app.corpus!.stats();
        expect(stats.dense).toBe(stats.chunks);
        expect(stats.lexical).toBe(stats.chunks);
      }),
      {
        numRuns: 150,
        // Found by this fuzz: a metadata key `__proto__` once reached Object.prototype through the field table.
        examples: [
          [{ documents: [{ text: '\u0000', meta: JSON.parse('{"__proto__": "", "constructor": 1}') as object }] }, []],
        ],
      },
    );
  });
});

describe('fuzzed tokenizers', () => {
  it('SentencePiece (USE-lite vocabulary): any string gives at least one in-range id', () => {
    const vocabulary = JSON.parse(readFileSync(join(ROOT, 'models/use-lite/vocab.json'), 'utf8')) as Vocabulary;
    const tokenizer = new SentencePieceTokenizer(vocabulary, { reserved: 6, unknownId: 0 });
    fc.assert(
      fc.property(text, (s) => {
        const ids = tokenizer.encode(s);
        expect(ids.length).toBeGreaterThan(0);
        for (const id of ids) expect(id >= 0 && id < vocabulary.length).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('tokenizer.json (WordPiece): any string or pair stays within the limit and in the vocabulary', async () => {
    const tokenizer = await HuggingFaceTokenizer.load(join(MODELS, 'encoder', 'tokenizer.json'));
    fc.assert(
      fc.property(text, text, fc.integer({ min: 4, max: 40 }), (a, b, limit) => {
        const single = tokenizer.encode(a, limit);
        const pair = tokenizer.encodePair(a, b, limit);
        expect(single.ids.length).toBeLessThanOrEqual(limit);
        expect(pair.ids.length).toBeLessThanOrEqual(limit);
        expect(pair.typeIds).toHaveLength(pair.ids.length);
        for (const id of [...single.ids, ...pair.ids]) expect(Number.isInteger(id) && id >= 0).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
