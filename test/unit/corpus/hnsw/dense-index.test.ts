import {
  readdirSync,
  readFileSync,
  closeSync,
  mkdtempSync,
  openSync,
  rmSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DenseIndex } from '../../../../src/corpus/hnsw/dense-index.js';
import { mulberry32 } from '../../../helpers/random.js';

const DIR = mkdtempSync(join(tmpdir(), 'rcp-dense-'));
afterAll(() => rmSync(DIR, { recursive: true, force: true }));
const DIMENSION = 64;
const options = {
  space: 'cosine' as const,
  dimension: DIMENSION,
  m: 16,
  efConstruction: 64,
  efSearch: 32,
  initialCapacity: 1024,
};

describe('the HNSW dense index in its worker', () => {
  it('§7.7.1 an exact search is the brute-force top k over the live points, filtered or not, after deletions', async () => {
    const index = new DenseIndex();
    await index.open(join(DIR, 'exact'), { ...options, efConstruction: 8, m: 4 }, { id: 'test', seq: 0 });
    const next = mulberry32(11);
    const vector = () => Float32Array.from({ length: DIMENSION }, () => next() - 0.5);
    const points = new Map<number, Float32Array>();
    const add = async (labels: number[]) => {
      const vectors = labels.map(vector);
      labels.forEach((label, i) => points.set(label, vectors[i]!));
      await index.add(labels, vectors, DIMENSION);
    };
    await add(Array.from({ length: 6000 }, (_, i) => i));
    const removed = Array.from({ length: 2000 }, (_, i) => i * 3);
    await index.remove(removed);
    for (const label of removed) points.delete(label);
    await add(Array.from({ length: 500 }, (_, i) => 10_000 + i)); // into the removed points' slots
    const cosine = (a: Float32Array, b: Float32Array) => {
      let [dot, aa, bb] = [0, 0, 0];
      for (let i = 0; i < a.length; i++) [dot, aa, bb] = [dot + a[i]! * b[i]!, aa + a[i]! ** 2, bb + b[i]! ** 2];
      return dot / Math.sqrt(aa * bb);
    };
    const allowed = [...points.keys()].filter((label) => label % 2 === 1); // over 4,096: the graph's filter path
    for (let q = 0; q < 10; q++) {
      const query = vector();
      for (const allow of [undefined, allowed]) {
        const pool = allow ?? [...points.keys()];
        const brute = pool
          .map((label) => ({ label, score: cosine(points.get(label)!, query) }))
          .sort((a, b) => b.score - a.score || a.label - b.label)
          .slice(0, 25)
          .map((hit) => hit.label);
        const found = await index.search(query, 25, 25, allow, undefined, undefined, true);
        expect(found.map((hit) => hit.label)).toEqual(brute);
      }
    }
    await index.close();
  });

  it('§13.1 a search whose caller gave up before its turn is never run: abandoned searches cost nobody', async () => {
    const index = new DenseIndex();
    await index.open(DIR, options, { id: 'test', seq: 0 });
    const next = mulberry32(7);
    const vector = () => Float32Array.from({ length: DIMENSION }, () => next() - 0.5);
    const labels = Array.from({ length: 20_000 }, (_, i) => i);
    await index.add(labels, labels.map(vector), DIMENSION);
    const query = vector();
    const timed = async () => {
      const started = performance.now();
      await index.search(query, 2000, 2000);
      return performance.now() - started;
    };
    const alone = Math.min(await timed(), await timed(), await timed());
    // 100 heavy searches queued, then abandoned at once (as a deadline would): each rejects with the reason, unrun.
    const controller = new AbortController();
    const abandoned = Array.from({ length: 100 }, () => index.search(query, 2000, 2000, undefined, controller.signal));
    controller.abort(new Error('deadline'));
    const settled = Promise.allSettled(abandoned);
    const behind = await timed();
    const results = await settled;
    expect(results.filter((result) => result.status === 'rejected').length).toBeGreaterThanOrEqual(99);
    // Behind the burst: the one search already in the worker, and its own; never a hundred.
    expect(behind).toBeLessThan(10 * alone + 50);
    await index.close();
  });

  it("§15.5 callers take turns: one caller's queued searches delay another's by one each, not by all of them", async () => {
    const index = new DenseIndex();
    await index.open(join(DIR, 'turns'), options, { id: 'test', seq: 0 });
    const next = mulberry32(11);
    const vector = () => Float32Array.from({ length: DIMENSION }, () => next() - 0.5);
    const labels = Array.from({ length: 5_000 }, (_, i) => i);
    await index.add(labels, labels.map(vector), DIMENSION);
    const query = vector();
    const finished: string[] = [];
    const search = (lane: string, tag: string) =>
      index.search(query, 500, 500, undefined, undefined, lane).then(() => finished.push(tag));
    // Forty searches from one caller queue first; then one from another caller, and one from the server (no lane).
    const flood = Array.from({ length: 40 }, (_, i) => search('attacker', `a${i}`));
    await Promise.all([...flood, search('polite', 'polite'), search('', 'server')]);
    // The first attacker search may already be in the worker; the others wait their turns.
    expect(finished.indexOf('polite')).toBeLessThanOrEqual(3);
    expect(finished.indexOf('server')).toBeLessThanOrEqual(3);
    // Within a lane, order is kept.
    const attacker = finished.filter((tag) => tag.startsWith('a'));
    expect(attacker).toEqual(Array.from({ length: 40 }, (_, i) => `a${i}`));
    await index.close();
  });

  it('a saved file that does not match its sum is discarded saying whether its length or its content differs', async () => {
    const vectors = Array.from({ length: 50 }, (_, i) => Float32Array.from({ length: DIMENSION }, (_, d) => i + d + 1));
    const store = { id: 'store-a', seq: 1 };
    const damaged = async (damage: (file: string) => void): Promise<string[]> => {
      const dir = mkdtempSync(join(DIR, 'saved-'));
      const index = new DenseIndex();
      try {
        await index.reset(options);
        await index.add(
          vectors.map((_, i) => i),
          vectors,
          DIMENSION,
        );
        await index.save(dir, 1, { space: options.space, dimension: DIMENSION, store: store.id });
        damage(
          join(
            dir,
            readdirSync(dir).find((name) => /^dense-1-[0-9a-f]+\.hnsw$/.test(name))!,
          ),
        );
        return (await index.open(dir, options, store)).discarded;
      } finally {
        await index.close();
      }
    };
    const [overwritten] = await damaged((file) => {
      const fd = openSync(file, 'r+');
      writeSync(fd, Buffer.from('damage'), 0, 6, 100);
      closeSync(fd);
    });
    expect(overwritten).toMatch(/: \d+ bytes as saved, but their SHA-256 differs \(damaged\)$/);
    const [truncated] = await damaged((file) => truncateSync(file, 1000));
    expect(truncated).toMatch(/: 1000 bytes, not the \d+ saved \(length differs\)$/);
  });

  it("a saved index's sum names the labels it holds marked deleted: the load needs no point read, old sums still load", async () => {
    const vectors = Array.from({ length: 40 }, (_, i) => Float32Array.from({ length: DIMENSION }, (_, d) => i * d + 1));
    const store = { id: 'store-d', seq: 1 };
    const dir = mkdtempSync(join(DIR, 'deleted-'));
    const index = new DenseIndex();
    const sumFile = () =>
      join(
        dir,
        readdirSync(dir).find((name) => name.endsWith('.sum'))!,
      );
    try {
      await index.reset(options);
      await index.add(
        vectors.map((_, i) => i),
        vectors,
        DIMENSION,
      );
      await index.remove([3, 17, 29]);
      await index.save(dir, 1, { space: options.space, dimension: DIMENSION, store: store.id });
      const sum = JSON.parse(readFileSync(sumFile(), 'utf8')) as { deleted?: number[]; count: number };
      expect(sum).toMatchObject({ deleted: [3, 17, 29], count: 37 });
      const live = vectors.map((_, i) => i).filter((label) => ![3, 17, 29].includes(label));
      expect((await index.open(dir, options, store)).seq).toBe(1);
      expect(Array.from(await index.labels())).toEqual(live);
      // A sum written before deleted labels were recorded: each point is read to find them.
      writeFileSync(sumFile(), JSON.stringify({ ...sum, deleted: undefined }));
      expect((await index.open(dir, options, store, { keep: true })).seq).toBe(1);
      expect(Array.from(await index.labels())).toEqual(live);
      // A sum whose list names a live label as deleted loads a count that disagrees: discarded, never served.
      writeFileSync(sumFile(), JSON.stringify({ ...sum, deleted: [3, 17, 29, 30] }));
      const reopened = await index.open(dir, options, store, { keep: true });
      expect(reopened.seq).toBe(0);
      expect(reopened.discarded[0]).toMatch(/36 vectors loaded, 37 saved$/);
    } finally {
      await index.close();
    }
  });

  it('a write of many points goes to the worker in parts: a search asked meanwhile is answered before the write ends', async () => {
    const index = new DenseIndex();
    const next = mulberry32(7);
    const vectors = Array.from({ length: 3_000 }, () => Float32Array.from({ length: DIMENSION }, () => next() - 0.5));
    try {
      await index.reset(options);
      const order: string[] = [];
      const adding = index
        .add(
          vectors.map((_, i) => i),
          vectors,
          DIMENSION,
        )
        .then(() => order.push('add'));
      const searching = index.search(vectors[0]!, 5, 32).then(() => order.push('search'));
      await Promise.all([adding, searching]);
      expect(order).toEqual(['search', 'add']);
      expect(await index.count()).toBe(3_000);
    } finally {
      await index.close();
    }
  });
});
