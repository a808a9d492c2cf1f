import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { Bm25Index } from '../../../src/lexical/bm25.js';
import { readLexical, writeLexical } from '../../../src/lexical/saved-lexical.js';

const options = { k1: 1.2, b: 0.75, stem: true, fields: { title: 2 } };
const identity = { seq: 7, store: 'store-a', options };
const DIR = mkdtempSync(join(tmpdir(), 'rcp-saved-lexical-'));
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

const words = ['cell', 'cells', 'protein', 'blood', 'heart', 'zebra', 'study', 'été', 'naïve', 'x'];
const text = fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 12 }).map((list) => list.join(' '));
/** A write: add (or replace) a label with a text and a title, or remove one. */
const operation = fc.oneof(
  fc.record({ add: fc.integer({ min: 0, max: 40 }), text, title: text }),
  fc.record({ remove: fc.integer({ min: 0, max: 40 }) }),
);

function apply(index: Bm25Index, op: { add?: number; text?: string; title?: string; remove?: number }): void {
  if (op.add !== undefined) index.add(op.add, op.text!, { title: op.title });
  else index.remove(op.remove!);
}

/** What a reader can see of an index: searches, scores, weights, counts and each document's terms. */
async function seen(index: Bm25Index) {
  const queries = ['cell blood', 'zebra heart study', 'été naïve x', 'protein'];
  return {
    size: index.size,
    hits: await Promise.all(queries.map((query) => index.search(query, 10))),
    scores: await Promise.all(queries.map((query) => index.scoreLabels(query, [0, 1, 2, 3, 5, 8, 13, 21, 34]))),
    weights: [...(await index.termWeights('cell heart', 'document'))],
    vocabulary: [...index.vocabulary()].sort(),
    counts: [0, 1, 2, 3, 5, 8, 13].map((label) => {
      const counts = index.termCounts(label);
      return counts && { length: counts.length, counts: [...counts.counts].sort() };
    }),
  };
}

describe('a saved lexical index (lexical/saved-lexical.ts)', () => {
  it('reads back as the index it was written from, and takes later writes as that index does (fuzzed)', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(operation, { maxLength: 60 }),
        fc.array(operation, { maxLength: 20 }),
        async (before, after) => {
          const original = new Bm25Index(options);
          for (const op of before) apply(original, op);
          const file = join(DIR, `index-${run++}.bm25`);
          await writeLexical(file, original, identity);
          const restored = await readLexical(file, identity);
          if (typeof restored === 'string') throw new Error(restored);
          expect(await seen(restored)).toEqual(await seen(original));
          // Appends land in the restored postings (views of the file's buffer) without touching their neighbours.
          for (const op of after) [original, restored].forEach((index) => apply(index, op));
          expect(await seen(restored)).toEqual(await seen(original));
        },
      ),
      { numRuns: 60 },
    );
  });

  it("takes writes before its documents' runs of terms are read out of the postings, built at once or in slices (fuzzed)", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(operation, { maxLength: 60 }),
        fc.array(operation, { maxLength: 20 }),
        fc.boolean(),
        async (before, after, inSlices) => {
          const original = new Bm25Index(options);
          for (const op of before) apply(original, op);
          const file = join(DIR, `pending-${run++}.bm25`);
          await writeLexical(file, original, identity);
          const restored = await readLexical(file, identity);
          if (typeof restored === 'string') throw new Error(restored);
          // Adds land while the runs are pending; the first removal (or term count) builds them.
          const building = inSlices ? restored.runsBuilt() : undefined;
          for (const op of after) [original, restored].forEach((index) => apply(index, op));
          await building;
          expect(await seen(restored)).toEqual(await seen(original));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('is not loaded when damaged, cut short, or saved for another seq, store or BM25 settings', async () => {
    const index = new Bm25Index(options);
    for (let label = 0; label < 30; label++) index.add(label, `cell ${label} blood heart`, { title: 'study' });
    const file = join(DIR, 'checked.bm25');
    await writeLexical(file, index, identity);
    const whole = readFileSync(file);
    expect(await readLexical(file, { ...identity, seq: 8 })).toMatch(/saved at seq 7/);
    expect(await readLexical(file, { ...identity, store: 'store-b' })).toMatch(/of store store-a/);
    expect(await readLexical(file, { ...identity, options: { ...options, k1: 0.9 } })).toMatch(/other BM25 settings/);
    const damaged = Buffer.from(whole);
    damaged[Math.floor(whole.length / 2)]! ^= 0xff;
    writeFileSync(file, damaged);
    expect(await readLexical(file, identity)).toMatch(/SHA-256 differs/);
    writeFileSync(file, whole.subarray(0, whole.length - 100));
    expect(typeof (await readLexical(file, identity))).toBe('string');
    expect(await readLexical(join(DIR, 'absent.bm25'), identity)).toMatch(/ENOENT/);
  });
});
