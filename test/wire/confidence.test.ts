import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, INITIALIZE, request, ROOT, TRANSPORTS, type Connection, type Frame } from '../helpers/wire.js';

/** §7.7.2 `confidence` over the default model: the shipped calibrations, advertised where default hits carry it. */
const ENCODER = `${ROOT}/models/use-lite`;

const DOCUMENTS = [
  { id: 'zyx', text: 'Zyxtrophin is a rare protein found in the retina of owls.' },
  { id: 'heart', text: 'The heart pumps blood through the arteries and veins of the body.' },
  { id: 'lungs', text: 'The lungs move oxygen into the blood and carbon dioxide out of it.' },
  { id: 'stars', text: 'Stars form in clouds of gas and dust in galaxies far away.' },
  { id: 'plants', text: 'Plants turn sunlight, water and carbon dioxide into sugar.' },
];

type Hit = { id: string; score: number; confidence?: number; scores: Record<string, number> };
type Capabilities = Record<string, Record<string, unknown>>;

async function open(transport: (typeof TRANSPORTS)[number], config: Record<string, unknown>) {
  const client = await connect(transport, { config: { 'models.encoder': ENCODER, ...config } });
  const init = (await client.exchange(INITIALIZE())) as { result: { capabilities: Capabilities } };
  await client.exchange(request('seed', 'index/add', { documents: DOCUMENTS }));
  return { client, capabilities: init.result.capabilities };
}

describe.each(TRANSPORTS)('§7.7.2 confidence over %s', (transport) => {
  let client: Connection;
  let capabilities: Capabilities;
  let id = 0;
  const hits = async (params: object) => {
    const frame = (await client.exchange(request(++id, 'retrieve', params))) as Frame;
    expect(frame.error, JSON.stringify(frame.error)).toBeUndefined();
    return (frame.result as { hits: Hit[] }).hits;
  };

  beforeAll(async () => ({ client, capabilities } = await open(transport, {})));
  afterAll(() => client.close());

  it('§6.1 retrieve.confidence is advertised for the default model and pipeline', () => {
    expect(capabilities.retrieve?.confidence).toBe(true);
  });

  it('§7.7.2 default retrieves carry a confidence in [0,1] on every hit, in the order of the fused score', async () => {
    const found = await hits({ query: 'zyxtrophin owls', k: 5 });
    expect(found.length).toBeGreaterThan(1);
    for (const hit of found) {
      expect(hit.confidence).toBeGreaterThanOrEqual(0);
      expect(hit.confidence).toBeLessThanOrEqual(1);
    }
    const confidences = found.map((hit) => hit.confidence!);
    expect(confidences).toEqual([...confidences].sort((a, b) => b - a));
    // The best-matching hit is the top of both lists: the table's probability at fused 1 is well above the rest.
    expect(found[0]!.id).toBe('zyx#0');
    expect(found[0]!.confidence).toBeGreaterThan(0.5);
    expect(found.at(-1)!.confidence).toBeLessThan(0.1);
  });

  it('§7.7.2 the other calibrated pipelines carry it too, each from its own table: dense, sparse, rrf, weighted', async () => {
    for (const params of [
      { mode: 'dense' },
      { mode: 'sparse' },
      { fusion: { method: 'rrf' } },
      { fusion: { method: 'weighted' } },
    ]) {
      const found = await hits({ query: 'heart blood', k: 3, ...params });
      expect(found.length, JSON.stringify(params)).toBeGreaterThan(0);
      for (const hit of found) expect(hit.confidence, JSON.stringify(params)).toBeGreaterThanOrEqual(0);
      const confidences = found.map((hit) => hit.confidence!);
      expect(confidences).toEqual([...confidences].sort((a, b) => b - a));
    }
  });

  it('§7.7.2 a pipeline no table was fitted on returns hits without confidence', async () => {
    for (const params of [
      { fusion: { method: 'weighted', weights: { dense: 2 } } },
      { fusion: { method: 'rrf', rrfK: 10 } },
      { fusion: { method: 'convex', alpha: 0.8 } },
      { mode: 'dense', rerank: { method: 'colbert' } },
      { mode: 'sparse', rewrite: 'multi-query' }, // lexical recall on an expanded query: larger BM25 scores
    ]) {
      const found = await hits({ query: 'heart blood', k: 3, ...params });
      expect(found.length, JSON.stringify(params)).toBeGreaterThan(0);
      expect(
        found.some((hit) => 'confidence' in hit),
        JSON.stringify(params),
      ).toBe(false);
    }
  });
});

describe('§6.1 confidence is not advertised where no hit would carry it', () => {
  it.each([
    ['the table turned off', { 'retrieve.confidenceTable': 'none' }],
    ['another default alpha', { 'retrieve.fusion.alpha': 0.7 }],
    ['rrf by default at another rrfK', { 'retrieve.fusion.method': 'rrf', 'retrieve.fusion.rrfK': 20 }],
  ])('%s', async (_, config) => {
    const { client, capabilities } = await open('in-process', config);
    try {
      expect(capabilities.retrieve).toBeDefined();
      expect(capabilities.retrieve?.confidence).toBeUndefined();
      const frame = (await client.exchange(request(1, 'retrieve', { query: 'heart blood', k: 3 }))) as Frame;
      const found = (frame.result as { hits: Hit[] }).hits;
      expect(found.length).toBeGreaterThan(0);
      expect(found.some((hit) => 'confidence' in hit)).toBe(false);
    } finally {
      await client.close();
    }
  });
});
