import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Bm25Index, type LexicalHit } from '../../../src/lexical/bm25.js';

const options = { k1: 1.2, b: 0.75, stem: false };

/**
 * BM25 computed the plain way, from the live documents' words: each distinct query term (first-occurrence order)
 * adds idf · tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl)); best first, ties by smaller label.
 */
function oracle(docs: ReadonlyMap<number, readonly string[]>, query: readonly string[], allow?: ReadonlySet<number>) {
  const n = docs.size;
  let total = 0;
  for (const words of docs.values()) total += words.length;
  const average = total / n;
  const scores = new Map<number, number>();
  for (const term of new Set(query)) {
    let df = 0;
    for (const words of docs.values()) if (words.includes(term)) df++;
    const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
    for (const [label, words] of docs) {
      const tf = words.filter((word) => word === term).length;
      if (tf === 0 || (allow !== undefined && !allow.has(label))) continue;
      const { k1, b } = options;
      const score = (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * words.length) / average));
      scores.set(label, (scores.get(label) ?? 0) + score);
    }
  }
  return [...scores].map(([label, score]) => ({ label, score })).sort((x, y) => y.score - x.score || x.label - y.label);
}

/** Skewed words: a few common, most rare, so bounds differ and MaxScore has terms to set aside. */
const word = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'b', 'c') },
  { weight: 3, arbitrary: fc.constantFrom('d', 'e', 'f', 'g') },
  { weight: 1, arbitrary: fc.constantFrom('h', 'i', 'j', 'k', 'l') },
);

describe('BM25 top-k pruning (MaxScore) equals exhaustive scoring', () => {
  it('same documents, same scores to the bit, same tie order: with allow sets, removals and replacements (fuzzed)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(word, { maxLength: 12 }), { minLength: 1, maxLength: 80 }),
        fc.array(fc.nat(), { maxLength: 30 }), // labels to remove (mod corpus size)
        fc.array(fc.tuple(fc.nat(), fc.array(word, { maxLength: 12 })), { maxLength: 20 }), // replacements
        fc.array(word, { minLength: 1, maxLength: 8 }), // query, repeats allowed
        fc.integer({ min: 1, max: 30 }),
        fc.option(fc.array(fc.nat(), { maxLength: 60 })), // allow set
        async (corpus, removals, replacements, query, k, allowed) => {
          const index = new Bm25Index(options);
          const docs = new Map<number, readonly string[]>();
          // Labels spread out and out of order, so internal ids and labels disagree about ties.
          const labelOf = (i: number) => ((i * 7919) % 1000) + 3;
          corpus.forEach((words, i) => {
            index.add(labelOf(i), words.join(' '));
            docs.set(labelOf(i), words);
          });
          for (const r of removals) {
            index.remove(labelOf(r % corpus.length));
            docs.delete(labelOf(r % corpus.length));
          }
          for (const [r, words] of replacements) {
            index.add(labelOf(r % corpus.length), words.join(' '));
            docs.set(labelOf(r % corpus.length), words);
          }
          const allow = allowed === null ? undefined : new Set(allowed.map((a) => labelOf(a % corpus.length)));
          const text = query.join(' ');
          const pruned = await index.search(text, k, allow);
          const exhaustive = await index.searchExhaustive(text, k, allow);
          expect(pruned).toEqual(exhaustive);
          expect(exhaustive).toEqual(docs.size === 0 ? [] : oracle(docs, query, allow).slice(0, k));
          // Completion scores of any labels (indexed or not) agree with the full ranking to the bit.
          const all = new Map(
            (await index.searchExhaustive(text, Number.MAX_SAFE_INTEGER)).map((h) => [h.label, h.score]),
          );
          const labels = [...docs.keys(), 1, 2, 2000];
          expect(await index.scoreLabels(text, labels)).toEqual(labels.map((label) => all.get(label) ?? 0));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('equal scores everywhere: ties broken by smaller label even when the smaller label was indexed last', async () => {
    const index = new Bm25Index(options);
    for (let label = 500; label > 0; label--) index.add(label, 'x y z');
    const hits = await index.search('x y z', 5);
    expect(hits.map((hit) => hit.label)).toEqual([1, 2, 3, 4, 5]);
    expect(hits).toEqual(await index.searchExhaustive('x y z', 5));
  });

  it('keeps its answers through many replacements (ids are handed out afresh once dead ones dominate)', async () => {
    const index = new Bm25Index(options);
    const texts = new Map<number, string>();
    const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta'];
    for (let round = 0; round < 60; round++) {
      for (let label = 0; label < 150; label++) {
        const text = words.filter((_, i) => (label * (round + 1) + i) % 3 !== 0).join(' ') + ` w${label % 7}`;
        index.add(label, text);
        texts.set(label, text);
      }
      if (round % 20 === 19) for (let label = 0; label < 150; label += 4) index.remove(label);
    }
    const reference = new Bm25Index(options);
    for (let label = 0; label < 150; label++) if (label % 4 !== 0) reference.add(label, texts.get(label)!);
    expect(index.size).toBe(reference.size);
    for (const query of ['alpha beta', 'gamma w3', 'zeta epsilon w1 w2', 'delta delta alpha']) {
      expect(await index.search(query, 10)).toEqual(await reference.search(query, 10));
      expect(await index.search(query, 10)).toEqual(await index.searchExhaustive(query, 10));
    }
    expect(index.termCounts(5)).toEqual(reference.termCounts(5));
    expect([...index.vocabulary()].sort()).toEqual([...reference.vocabulary()].sort());
    expect(index.labelsWith('w3', 100)).toEqual(reference.labelsWith('w3', 100));
  });

  it('a search that yields mid-way while documents are added and removed finishes with a well-formed answer', async () => {
    const index = new Bm25Index(options);
    for (let label = 0; label < 30_000; label++) index.add(label, `common term${label % 50} other${label % 7}`);
    const running = index.search('common term1 other2', 10);
    const writes = (async () => {
      for (let label = 0; label < 200; label++) {
        await new Promise((resolve) => setImmediate(resolve));
        index.remove(label);
        index.add(100_000 + label, 'common common term1');
      }
    })();
    const [hits] = await Promise.all([running, writes]);
    expect(hits.length).toBeLessThanOrEqual(10);
    for (let i = 1; i < hits.length; i++) {
      const [x, y] = [hits[i - 1]!, hits[i]!] as [LexicalHit, LexicalHit];
      expect(x.score > y.score || (x.score === y.score && x.label < y.label)).toBe(true);
    }
    expect(await index.search('common term1 other2', 10)).toEqual(
      await index.searchExhaustive('common term1 other2', 10),
    );
  });
});
