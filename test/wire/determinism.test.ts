import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../helpers/children.js';
import { callHttp as call, startHttpProcess, type ServerProcess } from '../helpers/processes.js';

/**
 * §7.7.1 `retrieve.deterministic`: identical `(query, params, seed, indexVersion)` give identical hits, order and
 * scores in any process. Two real processes over one data dir whose HNSW graphs were built differently (one took the
 * writes live, with deletions whose slots new points reused; the other built its graph from the store at its start)
 * answer every seeded retrieve alike, dense, hybrid and with MMR.
 */
const WORK = mkdtempSync(join(tmpdir(), 'rcp-determinism-'));
const servers: ServerProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  rmSync(WORK, { recursive: true, force: true });
});

const WORDS = ['cell', 'protein', 'membrane', 'signal', 'kinase', 'tumour', 'gene', 'enzyme', 'neuron', 'virus'];

function documents(prefix: string, n: number, seed: number) {
  const next = seededRandom(seed);
  const text = () => Array.from({ length: 12 }, () => WORDS[Math.floor(next() * WORDS.length)]).join(' ');
  return Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, text: text() }));
}

const QUERIES = ['kinase signal', 'neuron virus membrane', 'gene enzyme', 'tumour cell protein'];
const PARAMS = [{ mode: 'dense' }, { mode: 'hybrid' }, { mode: 'hybrid', mmr: { lambda: 0.5 } }];

/** Every seeded retrieve's hits (ids and scores, in order) and the indexVersion it answered at. */
async function answers(origin: string) {
  const all = [];
  for (const query of QUERIES) {
    for (const params of PARAMS) {
      const result = await call(origin, 'retrieve', { query, k: 10, seed: 7, includeText: false, ...params });
      const hits = (result.hits as { id: string; score: number }[]).map(({ id, score }) => ({ id, score }));
      all.push({ indexVersion: result.indexVersion, hits, notes: (result.usage as { notes?: string[] }).notes });
    }
  }
  return all;
}

describe('§7.7.1 seeded retrieve is the same in any process at one indexVersion', () => {
  it('advertises retrieve.deterministic, and two processes with differently built graphs answer alike', async () => {
    const dir = join(WORK, 'corpus');
    const live = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir]);
    servers.push(live);
    const init = await call(live.origin, 'initialize', {
      protocolVersion: 1,
      client: { name: 't', version: '1' },
      capabilities: {},
    });
    expect((init.capabilities as { retrieve: { deterministic?: boolean } }).retrieve.deterministic).toBe(true);
    for (const [prefix, seed] of [
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ] as const) {
      await call(live.origin, 'index/add', { documents: documents(prefix, 40, seed) });
    }
    await call(live.origin, 'index/delete', { ids: documents('b', 40, 2).map((document) => document.id) });
    await call(live.origin, 'index/add', { documents: documents('d', 40, 4) }); // into the deleted points' slots
    // Started beside it: no saved index yet, so it builds its graph from the store, in label order, without the
    // deleted points.
    const rebuilt = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir]);
    servers.push(rebuilt);
    expect(rebuilt.stderr()).toMatch(/"denseIndex":"rebuilt"/);
    const first = await answers(live.origin);
    expect(first.every((answer) => answer.hits.length === 10)).toBe(true);
    expect(first[0]!.notes).toContain('seed: the dense list was scored exactly over every vector (no ANN search)');
    expect(await answers(rebuilt.origin)).toEqual(first);
    // The seeded dense list is the exact top 10 by cosine over every stored document (each one chunk here).
    const corpus = [...documents('a', 40, 1), ...documents('c', 40, 3), ...documents('d', 40, 4)];
    const embed = async (texts: string[], kind: string) =>
      ((await call(live.origin, 'embed', { texts, kind })).vectors as number[][]).map((vector) =>
        Float64Array.from(vector),
      );
    const [query] = await embed([QUERIES[0]!], 'query');
    const vectors = await embed(
      corpus.map((document) => document.text),
      'document',
    );
    const cosine = (a: Float64Array, b: Float64Array) => {
      let [dot, aa, bb] = [0, 0, 0];
      for (let i = 0; i < a.length; i++) [dot, aa, bb] = [dot + a[i]! * b[i]!, aa + a[i]! ** 2, bb + b[i]! ** 2];
      return dot / Math.sqrt(aa * bb);
    };
    const exact = corpus
      .map((document, i) => ({ id: `${document.id}#0`, score: cosine(query!, vectors[i]!) }))
      .sort((x, y) => y.score - x.score)
      .slice(0, 10);
    const dense = first[0]!.hits;
    expect(dense.map((hit) => hit.id)).toEqual(exact.map((hit) => hit.id));
    dense.forEach((hit, i) => expect(hit.score).toBeCloseTo(exact[i]!.score, 5));
  });
});
