import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeF32Base64 } from '../../src/protocol/vectors.js';
import { golden } from '../fixtures/use-lite-golden.js';
import { error } from '../helpers/frames.js';
import { connect, INITIALIZE, request, TRANSPORTS, type Connection, type Frame } from '../helpers/wire.js';

const texts = golden.items.map((item) => item.text);
const BATCH_LIMIT = 8;

type Result = { vectors: (number[] | string)[]; encoding?: string; dimension?: number };
const result = (frame: Frame) => frame.result as Result;

function expectGolden(vectors: ArrayLike<number>[]): void {
  expect(vectors).toHaveLength(golden.items.length);
  golden.items.forEach((item, i) => {
    const worst = item.embedding.reduce((w, v, k) => Math.max(w, Math.abs(v - (vectors[i]![k] ?? NaN))), 0);
    expect(worst, item.text).toBeLessThan(1e-5);
  });
}

describe.each(TRANSPORTS)('embed over %s, with the default encoder (§7.3)', (transport) => {
  let client: Connection;
  let capabilities: Record<string, unknown>;
  beforeAll(async () => {
    client = await connect(transport, {
      config: { 'models.encoder': 'use-lite', 'models.embedBatchLimit': BATCH_LIMIT },
    });
    const init = (await client.exchange(INITIALIZE())) as Frame;
    capabilities = (init.result as { capabilities: Record<string, unknown> }).capabilities;
  });
  afterAll(() => client.close());

  it('§7.3 advertises embed with dimension, identity, batchLimit, normalized and §7.3.1 encodings', () => {
    expect(capabilities.embed).toEqual({
      dimension: 512,
      identity: expect.stringMatching(/^google\/universal-sentence-encoder-lite#[0-9a-f]{12}$/) as unknown,
      batchLimit: BATCH_LIMIT,
      normalized: true,
      encodings: ['json', 'f32-base64'],
    });
  });

  it('returns the golden vectors as JSON numbers', async () => {
    const frame = (await client.exchange(request(1, 'embed', { inputs: texts }))) as Frame;
    expect(result(frame).encoding).toBeUndefined();
    expectGolden(result(frame).vectors as number[][]);
  });

  it('§7.3.1 returns the golden vectors as little-endian f32-base64, echoing encoding and dimension', async () => {
    const frame = (await client.exchange(request(2, 'embed', { inputs: texts, encoding: 'f32-base64' }))) as Frame;
    expect(result(frame)).toMatchObject({ encoding: 'f32-base64', dimension: 512 });
    expectGolden((result(frame).vectors as string[]).map((blob) => decodeF32Base64(blob, 512, 'vectors')));
  });

  it('§7.3 accepts the legacy `texts`, text Content blocks and `kind`', async () => {
    const legacy = (await client.exchange(request(3, 'embed', { texts: [texts[0]] }))) as Frame;
    const blocks = (await client.exchange(
      request(4, 'embed', { inputs: [{ type: 'text', text: texts[0] }], kind: 'query' }),
    )) as Frame;
    const [vector] = result(legacy).vectors as number[][];
    const worst = golden.items[0]!.embedding.reduce((w, v, k) => Math.max(w, Math.abs(v - (vector![k] ?? NaN))), 0);
    expect(worst).toBeLessThan(1e-5);
    expect(result(blocks).vectors).toEqual(result(legacy).vectors);
  });

  it('answers an empty batch with no vectors', async () => {
    const frame = (await client.exchange(request(5, 'embed', { inputs: [] }))) as Frame;
    expect(result(frame).vectors).toEqual([]);
  });

  it.each([
    [
      '§7.3.1 -32005 for an unadvertised encoding',
      { inputs: ['x'], encoding: 'f16-base64' },
      -32005,
      { option: 'encoding' },
    ],
    [
      '§4.8 -32005 for a non-text block on a text-only server',
      { inputs: ['x', { type: 'image', mimeType: 'image/png', data: 'AAAA' }] },
      -32005,
      { option: 'inputs.1.type' },
    ],
    ['§4.8 -32602 for a text block without text', { inputs: [{ type: 'text' }] }, -32602, { field: 'inputs.0.text' }],
    ['§7.3 -32602 when neither inputs nor texts is given', { kind: 'query' }, -32602, { field: 'inputs' }],
    ['§4.6 -32602 for a number where a string belongs', { inputs: [42] }, -32602, {}],
    ['§7.3 -32602 for an unknown kind', { inputs: ['x'], kind: 'passage' }, -32602, { field: 'kind' }],
    [
      '§12 -32013 for more inputs than embed.batchLimit',
      { inputs: Array.from({ length: BATCH_LIMIT + 1 }, () => 'x') },
      -32013,
      { field: 'inputs', retryable: false },
    ],
  ])('%s', async (_name, params, code, data) => {
    const frame = (await client.exchange(request(6, 'embed', params))) as Frame;
    expect(error(frame).code).toBe(code);
    expect(error(frame).data).toMatchObject(data);
  });
});
