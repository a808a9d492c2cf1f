import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, INITIALIZE, request, ROOT, type Connection, type Frame } from '../helpers/wire.js';

/**
 * §7.7 §7.10 hits name what the client wrote, even while the same ids are upserted concurrently: a hit's id is its
 * document id (and chunk place), never an internal label, and always agrees with `chunk.docId`.
 */
const ENCODER = `${ROOT}/models/use-lite`;
type Hit = { id: string; chunk?: { docId: string; index: number } };

describe('concurrent upserts of the same ids with chunk: true while others retrieve', () => {
  let client: Connection;
  let next = 0;
  const call = (method: string, params: object) => client.exchange(request(++next, method, params));

  beforeAll(async () => {
    client = await connect('in-process', { config: { 'models.encoder': ENCODER } });
    await client.exchange(INITIALIZE());
  });
  afterAll(() => client.close());

  it('never returns a bare label or an id that disagrees with chunk.docId', async () => {
    const ids = Array.from({ length: 4 }, (_, i) => `doc-${i}`);
    const text = (round: number) =>
      Array.from({ length: 40 }, (_, s) => `Sentence ${s} of round ${round} about blood and the heart.`).join(' ');
    const writes = (async () => {
      for (let round = 0; round < 12; round++) {
        const documents = ids.map((id) => ({ id, text: text(round) }));
        const answer = (await call('index/add', { documents, chunk: true })) as Frame;
        expect(answer.error).toBeUndefined();
      }
    })();
    const hits: Hit[] = [];
    let done = false;
    void writes.finally(() => (done = true));
    const reader = async (mode: string) => {
      while (!done) {
        const answer = (await call('retrieve', { query: 'blood heart round', k: 20, mode })) as Frame;
        hits.push(...((answer.result as { hits: Hit[] } | undefined)?.hits ?? []));
      }
    };
    await Promise.all(['dense', 'sparse', 'hybrid', 'dense', 'sparse', 'hybrid'].map(reader));
    await writes;
    expect(hits.length).toBeGreaterThan(0);
    for (const hit of hits) {
      expect(ids).toContain(hit.chunk?.docId);
      expect(hit.id).toBe(`${hit.chunk!.docId}#${hit.chunk!.index}`);
    }
  });
});
