import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SPARSE_VOCABULARY, termIndex } from '../../src/methods/embed-sparse.js';
import { connect, INITIALIZE, request, ROOT, TRANSPORTS, type Connection, type Frame } from '../helpers/wire.js';

/**
 * §7.4 embed/sparse over every transport: BM25's own term weights over a stable hashed vocabulary, so the dot product
 * of a query vector and a document vector is exactly the BM25 score `retrieve mode:"sparse"` reports for it.
 */
const DOCUMENTS = [
  { id: 'heart', text: 'The heart pumps blood through the arteries; blood returns through the veins.' },
  { id: 'lung', text: 'The lungs move oxygen into the blood.' },
  { id: 'star', text: 'Stars form in clouds of gas and dust.' },
];
type Sparse = { indices: number[]; values: number[] };

const dot = (a: Sparse, b: Sparse): number => {
  const other = new Map(b.indices.map((index, i) => [index, b.values[i]!]));
  return a.indices.reduce((sum, index, i) => sum + a.values[i]! * (other.get(index) ?? 0), 0);
};

describe.each(TRANSPORTS)('embed/sparse over %s', (transport) => {
  let client: Connection;
  let capabilities: Record<string, Record<string, unknown>>;
  let id = 0;
  const call = async (method: string, params: object) =>
    (await client.exchange(request(++id, method, params))) as Frame;
  const sparse = async (texts: string[], kind?: string) =>
    ((await call('embed/sparse', { texts, ...(kind === undefined ? {} : { kind }) })).result as { sparse: Sparse[] })
      .sparse;

  beforeAll(async () => {
    client = await connect(transport, { config: { 'models.encoder': `${ROOT}/models/use-lite` } });
    capabilities = ((await client.exchange(INITIALIZE())) as { result: { capabilities: typeof capabilities } }).result
      .capabilities;
    await call('index/add', { documents: DOCUMENTS });
  });
  afterAll(() => client.close());

  it('advertises what the weights are, and the vocabulary size', () => {
    expect(capabilities.sparseEmbed).toEqual({
      identity: expect.stringMatching(/^rcp-server\/bm25-term-weights@1 .*porter-stemmed.*k1 1\.2, b 0\.75/) as unknown,
      vocabulary: SPARSE_VOCABULARY,
    });
  });

  it('dot(query, document) is the BM25 score retrieve reports for that document', async () => {
    const query = 'blood pumping through veins';
    const [q] = await sparse([query], 'query');
    expect(new Set(q!.values)).toEqual(new Set([1]));
    const documents = await sparse(DOCUMENTS.map((doc) => doc.text));
    const hits = (
      (await call('retrieve', { query, k: 3, mode: 'sparse' })).result as {
        hits: { id: string; scores: { sparse: number } }[];
      }
    ).hits;
    expect(hits.length).toBe(2);
    for (const hit of hits) {
      const i = DOCUMENTS.findIndex((doc) => `${doc.id}#0` === hit.id);
      expect(dot(q!, documents[i]!)).toBeCloseTo(hit.scores.sparse, 10);
    }
    expect(dot(q!, documents[2]!)).toBe(0);
  });

  it('indexes stemmed, folded terms by a stable hash, ascending and in range', async () => {
    const [vector] = await sparse(['Pumping PUMPS pumped'], 'query');
    expect(vector).toEqual({ indices: [termIndex('pump')], values: [1] });
    const [doc] = await sparse([DOCUMENTS[0]!.text]);
    expect(doc!.indices).toEqual([...doc!.indices].sort((a, b) => a - b));
    for (const index of doc!.indices) expect(index).toBeLessThan(SPARSE_VOCABULARY);
    expect(doc!.values.every((value) => value > 0)).toBe(true);
  });

  it('refuses what it cannot take: no texts -32602, a non-text block -32005, too many -32013', async () => {
    expect(((await call('embed/sparse', {})).error as { code: number }).code).toBe(-32602);
    const image = { type: 'image', mimeType: 'image/png', data: 'AAAA' };
    expect(((await call('embed/sparse', { inputs: [image] })).error as { code: number }).code).toBe(-32005);
    const many = Array.from({ length: 300 }, () => 'x');
    expect(((await call('embed/sparse', { texts: many })).error as { code: number }).code).toBe(-32013);
  });
});
