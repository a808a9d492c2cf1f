import Database from 'better-sqlite3';
import {
  closeSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { turnsDuring } from '../../helpers/pinging.js';
import { chunkText } from '../../../src/corpus/chunking.js';
import { Corpus, CorpusError, type CorpusSettings } from '../../../src/corpus/corpus.js';
import { IDEMPOTENCY_KEPT } from '../../../src/corpus/store/corpus-store.js';
import { callerScoped } from '../../../src/protocol/context.js';
import { corpusSettings, fixtureEncoder } from '../../helpers/test-corpus.js';

const ROOT = mkdtempSync(join(tmpdir(), 'rcp-corpus-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));

const lines: { msg: string; obj: object }[] = [];
const log = {
  info: (obj: object, msg = '') => lines.push({ obj, msg }),
  warn: (obj: object, msg = '') => lines.push({ obj, msg }),
  error: (obj: object, msg = '') => lines.push({ obj, msg }),
};
const encoder = fixtureEncoder(ROOT, log);
afterAll(() => encoder.close());

const settings = (dir: string, overrides: Partial<CorpusSettings> = {}): CorpusSettings =>
  corpusSettings(ROOT, dir, { fields: { year: 'int', source: 'keyword' }, ...overrides });

async function open(dir: string, overrides: Partial<CorpusSettings> = {}): Promise<Corpus> {
  const corpus = new Corpus(settings(dir, overrides), encoder, log);
  await corpus.ready;
  return corpus;
}

/** Overwrites `length` bytes at `offset` in place with a pattern no valid file holds there. */
function garble(file: string, offset: number, length: number): void {
  const fd = openSync(file, 'r+');
  writeSync(fd, Buffer.alloc(length, 0xa5), 0, length, offset);
  closeSync(fd);
}

const docs = (n: number, prefix = 'doc') =>
  Array.from({ length: n }, (_, i) => ({
    id: `${prefix}-${i}`,
    text: `the protein ${i} and cell ${i % 7} in the study of blood`,
  }));

/** Resolves once `corpus` has applied `indexVersion` (it follows the other's writes on its own). */
async function reached(corpus: Corpus, indexVersion: string): Promise<void> {
  while (Number(corpus.indexVersion) < Number(indexVersion)) await new Promise((resolve) => setImmediate(resolve));
}

const top = async (corpus: Corpus, text: string) =>
  (await corpus.searchLexical(text, 3)).map(({ label }) => corpus.placeOf(label)?.docId);

describe('corpus: many processes over one data dir (docs/architecture.md §5)', () => {
  it("each serves the other's writes, under one indexVersion sequence, deletions included", async () => {
    const a = await open('shared');
    const b = await open('shared');
    const first = await a.add(docs(4, 'a'), { chunk: false, contextual: false });
    const second = await b.add(docs(4, 'b'), { chunk: false, contextual: false });
    expect([first.indexVersion, second.indexVersion]).toEqual(['1', '2']);
    await reached(a, '2');
    expect(await top(a, 'protein 2 cell 2')).toEqual(await top(b, 'protein 2 cell 2'));
    expect(await a.stats()).toMatchObject({ documents: 8, dense: 8, lexical: 8, indexVersion: '2' });
    const deleted = await a.delete(['b-2']);
    await reached(b, deleted.indexVersion);
    expect(await b.stats()).toMatchObject({ documents: 7, dense: 7, lexical: 7 });
    expect(b.metaOf('b-2')).toEqual({});
    await Promise.all([a.close(), b.close()]);
  });

  it('one keyed write taken by both at once is written once, and each answers it (§7.10)', async () => {
    const a = await open('keyed');
    const b = await open('keyed');
    const write = { chunk: false, contextual: false, idempotencyKey: 'k1' };
    const answers = await Promise.all([a.add(docs(3, 'k'), write), b.add(docs(3, 'k'), write)]);
    expect(answers[0]).toEqual(answers[1]);
    expect(a.store.seq).toBe(1);
    expect(await b.stats()).toMatchObject({ documents: 3, dense: 3, indexVersion: '1' });
    await Promise.all([a.close(), b.close()]);
  });

  it('a process beside others with another index setting is refused, naming it; alone it may change it', async () => {
    const a = await open('agreed');
    expect(() => new Corpus(settings('agreed', { m: 32 }), encoder, log)).toThrow(
      /index\.m is 16 in the processes serving .*, but 32 here/,
    );
    await a.close();
    const alone = await open('agreed', { m: 32 });
    await alone.close();
  });

  it('a read-only process started before any writer serves what a writer then writes', async () => {
    const reader = await open('reader-first', { writable: false });
    const writer = await open('reader-first');
    const { indexVersion } = await writer.add(docs(3, 'w'), { chunk: false, contextual: false });
    await reached(reader, indexVersion);
    expect(await reader.stats()).toMatchObject({ documents: 3, dense: 3, lexical: 3 });
    await Promise.all([reader.close(), writer.close()]);
  });

  it('a process opening the dir while another saves its dense index loads a valid index', async () => {
    const a = await open('saving');
    await a.add(docs(300), { chunk: false, contextual: false });
    await a.save();
    await a.add(docs(100, 'more'), { chunk: false, contextual: false });
    const saving = a.save(); // its temporary files are being written as b lists the dir
    const b = await open('saving');
    await saving;
    expect(await b.stats()).toMatchObject({ documents: 400, dense: 400, indexVersion: '2' });
    // Every stored vector is found (itself, or a document of the same text: 'more-i' repeats 'doc-i').
    for (const chunk of b.store.chunks())
      expect((await b.searchDense(chunk.vector, 1))[0]?.score).toBeGreaterThan(0.999);
    await Promise.all([a.close(), b.close()]);
  });

  it('a stray saved file ahead of the store (dropped in, left by a restore) does not stop saving', async () => {
    const corpus = await open('stray');
    await corpus.add(docs(3), { chunk: false, contextual: false });
    await corpus.save();
    const dir = join(ROOT, 'stray');
    for (const name of readdirSync(dir).filter((file) => /^dense-1-/.test(file)))
      cpSync(join(dir, name), join(dir, name.replace(/^dense-1-[0-9a-f]+/, 'dense-99999999-abcd1234')));
    await corpus.add(docs(2, 'later'), { chunk: false, contextual: false });
    await corpus.save();
    expect(readdirSync(dir).some((name) => /^dense-2-[0-9a-f]+\.hnsw$/.test(name))).toBe(true);
    await corpus.close();
  });

  it('a process behind the removals the store keeps loads its indexes again, and serves the store as it is', async () => {
    const a = await open('behind');
    const b = await open('behind', { followMs: 60_000 });
    await a.add(docs(6, 'x'), { chunk: false, contextual: false });
    await a.save();
    await a.delete(['x-1', 'x-2']);
    await a.add(docs(2, 'y'), { chunk: false, contextual: false });
    await a.save(); // prunes the removals through the first save, which b never applied
    lines.length = 0;
    const own = await b.add(docs(1, 'z'), { chunk: false, contextual: false });
    expect(own.indexVersion).toBe('4');
    expect(lines.some((line) => line.msg.includes('loading its indexes again'))).toBe(true);
    expect(await b.stats()).toMatchObject({ documents: 7, dense: 7, lexical: 7, indexVersion: '4' });
    expect(await top(b, 'protein 1 cell 1')).not.toContain('x-1');
    await Promise.all([a.close(), b.close()]);
  });
});

describe('corpus: store + dense + lexical in step', () => {
  it('§7.10 a reader during an upsert never sees the document twice (its old and new chunks at once)', async () => {
    const corpus = await open('atomic');
    await corpus.add(docs(20), { chunk: false, contextual: false });
    const text = (i: number) => `the unicorn version ${i} in the study of blood`;
    await corpus.add([{ id: 'same', text: text(0) }], { chunk: false, contextual: false });
    const vector = corpus.vectorOf((await corpus.searchLexical('unicorn', 1))[0]!.label)!;
    let writing = true;
    const writer = (async () => {
      for (let i = 1; i <= 30; i++)
        await corpus.add([{ id: 'same', text: text(i) }], { chunk: false, contextual: false });
      writing = false;
    })();
    const seen: number[] = [];
    const placed = (hits: { label: number }[]) =>
      hits.filter(({ label }) => corpus.placeOf(label)?.docId === 'same').length;
    while (writing) {
      // What recall keeps of each list: the labels placed once both lists are in (retrieval/recall.ts).
      const [lexical, dense] = [await corpus.searchLexical('unicorn', 5), await corpus.searchDense(vector, 21)];
      seen.push(placed(lexical), placed(dense));
    }
    await writer;
    expect(seen).toContain(1);
    // A search made before the switch and filtered after it may miss the document for that request (the old label
    // unplaced, the new one not in its list): what stays is never two versions at once.
    expect(seen).not.toContain(2);
    await corpus.close();
  });

  it('upserts by id: re-adding replaces, never duplicates, in every index', async () => {
    const corpus = await open('upsert');
    await corpus.add(docs(5), { chunk: false, contextual: false });
    await corpus.add([{ id: 'doc-1', text: 'replaced text about the brain' }], { chunk: false, contextual: false });
    expect(await corpus.stats()).toMatchObject({ documents: 5, chunks: 5, dense: 5, lexical: 5 });
    expect(corpus.getDocument('doc-1')?.text).toBe('replaced text about the brain');
    await corpus.close();
  });

  it('serves hits from its chunk cache after one store read each, and never a replaced chunk', async () => {
    const corpus = await open('chunk-cache', { chunkCacheBytes: 1 << 20 });
    await corpus.add(docs(5), { chunk: false, contextual: false });
    const reads: number[] = [];
    const read = corpus.store.getChunk.bind(corpus.store);
    corpus.store.getChunk = (label) => (reads.push(label), read(label));
    const labels = (await corpus.searchLexical('protein blood', 5)).map((hit) => hit.label);
    expect(labels).toHaveLength(5);
    const first = labels.map((label) => corpus.getChunk(label)?.text);
    const again = labels.map((label) => corpus.getChunk(label)?.text);
    expect(again).toEqual(first);
    expect(reads.sort()).toEqual([...labels].sort());
    const [label] = labels;
    const docId = corpus.getChunk(label!)!.docId;
    await corpus.add([{ id: docId, text: 'replaced text about the brain' }], { chunk: false, contextual: false });
    expect(corpus.getChunk(label!)).toBeUndefined();
    await corpus.close();
  });

  it('§16.3 dense completion scores each label as dense recall does, reading vectors a batch per statement', async () => {
    const corpus = await open('dense-scores');
    await corpus.add(docs(6), { chunk: false, contextual: false });
    const [query] = await encoder.embed(['protein in blood'], 'query');
    const recalled = await corpus.searchDense(query!, 6);
    const single: number[] = [];
    const read = corpus.store.vectorOf.bind(corpus.store);
    corpus.store.vectorOf = (label) => (single.push(label), read(label));
    const scores = await corpus.denseScores(query!, [...recalled.map((hit) => hit.label), 9999]);
    recalled.forEach((hit, i) => expect(scores[i]).toBeCloseTo(hit.score, 6));
    expect(scores.at(-1)).toBe(-1);
    expect(single).toEqual([]);
    await corpus.delete([corpus.getChunk(recalled[0]!.label)!.docId]);
    expect(await corpus.denseScores(query!, [recalled[0]!.label])).toEqual([-1]);
    await corpus.close();
  });

  it('§7.14 reads stored vectors (MMR, dense completion) in time slices and stops there once the request is aborted', async () => {
    const corpus = await open('vectors-aborted');
    await corpus.add(docs(6), { chunk: false, contextual: false });
    let statements = 0;
    const read = corpus.store.vectorsOf.bind(corpus.store);
    corpus.store.vectorsOf = (labels) => {
      statements++;
      const until = performance.now() + 2; // a slow store read
      while (performance.now() < until);
      return read(labels);
    };
    const controller = new AbortController();
    controller.abort(new Error('cancelled'));
    const labels = Array.from({ length: 1000 }, (_, i) => i);
    await expect(corpus.vectorsOf(labels, controller.signal)).rejects.toThrow('cancelled');
    expect(statements).toBeLessThan(labels.length / 64);
    expect((await corpus.vectorsOf(labels)).size).toBe(6);
    await corpus.close();
  });

  it('§8 a filter whose test of one document is slow gives the event loop back as its time slice runs out', async () => {
    const corpus = await open('slow-filter');
    try {
      await corpus.add(docs(40), { chunk: false, contextual: false });
      // Five milliseconds per document, as a filter of 1,000 `contains` nodes over 20 KB values costs.
      const slow = () => {
        for (const until = performance.now() + 5; performance.now() < until;);
        return true;
      };
      const { answer, turns } = await turnsDuring(() => corpus.labelsWhere(slow));
      expect(answer).toHaveLength(40);
      // 200 ms of tests: other callbacks ran at least every 4 documents (checked every 16, they ran twice).
      expect(turns).toBeGreaterThanOrEqual(10);
    } finally {
      await corpus.close();
    }
  });

  it('deletes idempotently, removing the chunks from every index', async () => {
    const corpus = await open('delete');
    await corpus.add(docs(4), { chunk: false, contextual: false });
    expect(await corpus.delete(['doc-0', 'doc-0', 'nope'])).toMatchObject({ deleted: 1 });
    expect(await corpus.delete(['doc-0'])).toMatchObject({ deleted: 0 });
    expect(await corpus.stats()).toMatchObject({ documents: 3, chunks: 3, dense: 3, lexical: 3 });
    await corpus.close();
  });

  it('§7.10 is all or nothing: one bad document leaves the corpus exactly as it was', async () => {
    const corpus = await open('atomic');
    await corpus.add(docs(2), { chunk: false, contextual: false });
    const before = await corpus.stats();
    const bad = [
      [{ text: '   ' }, 'documents.1.text'],
      [{ text: 'x'.repeat(10_001) }, 'documents.1.text'],
      [{ text: 'ok', meta: { year: '2020' } }, 'documents.1.meta.year'],
      [{ text: 'ok', meta: { year: 2020.5 } }, 'documents.1.meta.year'],
      [{ text: 'ok', meta: { source: 7 } }, 'documents.1.meta.source'],
    ] as const;
    for (const [document, field] of bad) {
      await expect(
        corpus.add([{ id: 'fine', text: 'a fine document' }, document], { chunk: false, contextual: false }),
      ).rejects.toMatchObject({ code: -32602, data: { field } });
    }
    expect(await corpus.stats()).toEqual(before);
    expect(corpus.getDocument('fine')).toBeUndefined();
    await corpus.close();
  });

  it('§7.10 _meta.idempotencyKey returns the original result for a repeat, without writing again', async () => {
    const corpus = await open('idempotent');
    const first = await corpus.add([{ text: 'minted id document' }], {
      chunk: false,
      contextual: false,
      idempotencyKey: 'k1',
    });
    const again = await corpus.add([{ text: 'minted id document' }], {
      chunk: false,
      contextual: false,
      idempotencyKey: 'k1',
    });
    expect(again).toEqual(first);
    expect((await corpus.stats()).documents).toBe(1);
    await corpus.close();
  });

  it('§15.5 only the latest keyed writes are remembered, within a count and a byte bound', async () => {
    const corpus = await open('idempotency-bound');
    const kept = { ...IDEMPOTENCY_KEPT };
    const add = (key: string, id = key) =>
      corpus.add([{ id, text: `document ${id}` }], { chunk: false, contextual: false, idempotencyKey: key });
    try {
      IDEMPOTENCY_KEPT.writes = 3;
      for (const key of ['a', 'b', 'c', 'd']) await add(key);
      // 'a' is four writes old: forgotten, so its repeat is a new write; 'd' is remembered.
      expect((await add('a', 'a-again')).ids).toEqual(['a-again']);
      expect((await add('d', 'd-again')).ids).toEqual(['d']);
      IDEMPOTENCY_KEPT.writes = 1000;
      IDEMPOTENCY_KEPT.bytes = 1;
      await add('e');
      expect((await add('e', 'e-again')).ids).toEqual(['e-again']);
    } finally {
      Object.assign(IDEMPOTENCY_KEPT, kept);
      await corpus.close();
    }
  });

  it("§15.6 a caller's keyed writes prune only its own keys: a flood of another caller's never forgets them", async () => {
    const corpus = await open('idempotency-per-caller');
    const kept = { ...IDEMPOTENCY_KEPT };
    const add = (caller: string, key: string, id: string) =>
      corpus.add([{ id, text: `document ${id}` }], {
        chunk: false,
        contextual: false,
        idempotencyKey: callerScoped(caller, key),
      });
    try {
      IDEMPOTENCY_KEPT.writes = 3;
      await add('victim', 'v1', 'v1');
      for (let i = 0; i < 12; i++) await add('flooder', `f${i}`, `f${i}`);
      // The victim's retry is its first answer; the flooder's own oldest keys are forgotten (a new write each).
      expect((await add('victim', 'v1', 'v1-again')).ids).toEqual(['v1']);
      expect((await add('flooder', 'f0', 'f0-again')).ids).toEqual(['f0-again']);
      expect((await add('flooder', 'f11', 'f11-again')).ids).toEqual(['f11']);
    } finally {
      Object.assign(IDEMPOTENCY_KEPT, kept);
      await corpus.close();
    }
  });

  it('a store written before keys had a caller (schema 2) opens with each key under its caller', async () => {
    const first = await open('idempotency-schema-2');
    await first.add([{ id: 'old', text: 'old document' }], {
      chunk: false,
      contextual: false,
      idempotencyKey: callerScoped('victim', 'k'),
    });
    await first.close();
    // Back to the schema-2 table, as an older rcp-server left it.
    const db = new Database(join(ROOT, 'idempotency-schema-2', 'corpus.sqlite'));
    db.exec(`DROP INDEX idempotency_caller; ALTER TABLE idempotency DROP COLUMN caller;
      UPDATE meta SET value = '2' WHERE key = 'schema'`);
    db.close();
    const reopened = await open('idempotency-schema-2');
    try {
      const db2 = new Database(join(ROOT, 'idempotency-schema-2', 'corpus.sqlite'), { readonly: true });
      expect(db2.prepare('SELECT caller FROM idempotency').pluck().all()).toEqual(['victim']);
      db2.close();
      const again = await reopened.add([{ id: 'new', text: 'new' }], {
        chunk: false,
        contextual: false,
        idempotencyKey: callerScoped('victim', 'k'),
      });
      expect(again.ids).toEqual(['old']);
    } finally {
      await reopened.close();
    }
  });

  it('restart loads the saved dense index and replays later writes from the store (no re-embedding)', async () => {
    const crashed = await open('restart');
    await crashed.add(docs(20), { chunk: false, contextual: false });
    await crashed.save();
    await crashed.add(docs(5, 'late'), { chunk: false, contextual: false });
    await crashed.delete(['doc-3']);
    // The first process "dies" here: never saved again, and its hold on the dir goes with it (as the kernel drops
    // a dead process's lock). A second one opens the same directory.
    expect(readdirSync(join(ROOT, 'restart')).filter((name) => name.endsWith('.hnsw'))).toEqual([
      expect.stringMatching(/^dense-1-[0-9a-f]+\.hnsw$/),
    ]);
    await crashed.store.close();
    lines.length = 0;
    const restarted = await open('restart');
    expect(lines.find((line) => line.msg === 'corpus ready')?.obj).toMatchObject({ denseIndex: 'loaded at seq 1' });
    expect(await restarted.stats()).toMatchObject({ documents: 24, chunks: 24, dense: 24, lexical: 24 });
    await restarted.close();
  });

  it('no saved file: the dense index is rebuilt from the stored vectors, with a log line', async () => {
    let corpus = await open('rebuild');
    await corpus.add(docs(6), { chunk: false, contextual: false });
    await corpus.close();
    for (const name of readdirSync(join(ROOT, 'rebuild')))
      if (name.endsWith('.hnsw')) rmSync(join(ROOT, 'rebuild', name));
    lines.length = 0;
    corpus = await open('rebuild');
    expect(await corpus.stats()).toMatchObject({ documents: 6, chunks: 6, dense: 6, lexical: 6 });
    expect(lines.some((line) => line.msg.includes('rebuilding it from the store'))).toBe(true);
    await corpus.close();
  });

  it('uses the saved file when present: a restart after a save rebuilds nothing, and deleted points stay deleted', async () => {
    let corpus = await open('reload');
    await corpus.add(docs(10), { chunk: false, contextual: false });
    await corpus.delete(['doc-1', 'doc-2']);
    await corpus.add([{ id: 'doc-3', text: 'replaced' }], { chunk: false, contextual: false });
    await corpus.close();
    lines.length = 0;
    corpus = await open('reload');
    expect(lines.find((line) => line.msg === 'corpus ready')?.obj).toMatchObject({ denseIndex: 'loaded at seq 3' });
    expect(await corpus.stats()).toMatchObject({ documents: 8, chunks: 8, dense: 8, lexical: 8 });
    await corpus.close();
  });

  it('restart opens the lexical index saved with the dense one, analysing only the texts written after it', async () => {
    const first = await open('lexical-restart');
    await first.add(docs(20), { chunk: false, contextual: false });
    await first.save();
    await first.add(docs(5, 'late'), { chunk: false, contextual: false });
    await first.delete(['doc-3']);
    await first.add([{ id: 'doc-4', text: 'the replaced protein of blood' }], { chunk: false, contextual: false });
    const seen = async (corpus: Corpus) => ({
      hits: await corpus.searchLexical('protein cell blood', 30),
      weights: [...(await corpus.termWeights('protein 4 blood', 'document'))],
      stats: await corpus.stats(),
    });
    const expected = await seen(first);
    await first.store.close(); // dies here: the writes after seq 1 are in the store only
    const ready = () => lines.find((line) => line.msg === 'corpus ready')?.obj;
    lines.length = 0;
    const second = await open('lexical-restart');
    expect(ready()).toMatchObject({ denseIndex: 'loaded at seq 1', lexicalIndex: 'loaded at seq 1' });
    expect(await seen(second)).toEqual(expected);
    await second.close();
    // The save at close wrote both at seq 4; without the lexical file it is rebuilt, to the same index.
    const dir = join(ROOT, 'lexical-restart');
    for (const name of readdirSync(dir)) if (name.endsWith('.bm25')) rmSync(join(dir, name));
    lines.length = 0;
    const third = await open('lexical-restart');
    expect(ready()).toMatchObject({ denseIndex: 'loaded at seq 4', lexicalIndex: 'rebuilt' });
    expect(await seen(third)).toEqual(expected);
    await third.close();
  });

  it('restart after a save: a one-chunk document written after it keeps its metadata and origin (filters, trust)', async () => {
    const first = await open('meta-after-save');
    await first.add(docs(3), { chunk: false, contextual: false });
    await first.save();
    const late = { id: 'late', text: 'a late protein', meta: { source: 'b' } };
    await first.add([late], { chunk: false, contextual: false, origin: 'operator' });
    await first.store.close(); // dies here: the write after the save is in the store only
    const second = await open('meta-after-save');
    const labels = await second.labelsWhere((meta) => meta.source === 'b');
    expect(labels.map((label) => second.placeOf(label)?.docId)).toEqual(['late']);
    expect(second.metaOf('late')).toEqual({ source: 'b' });
    expect(second.originOf('late')).toBe('operator');
    await second.close();
  });

  it('a damaged saved lexical index is never loaded: rebuilt from the store, with a log line', async () => {
    let corpus = await open('lexical-damaged');
    await corpus.add(docs(12), { chunk: false, contextual: false });
    const expected = await corpus.searchLexical('protein cell', 12);
    await corpus.close();
    const dir = join(ROOT, 'lexical-damaged');
    const [saved] = readdirSync(dir).filter((name) => name.endsWith('.bm25'));
    garble(join(dir, saved!), 64, 16);
    lines.length = 0;
    corpus = await open('lexical-damaged');
    expect(lines.find((line) => line.msg === 'corpus ready')?.obj).toMatchObject({ lexicalIndex: 'rebuilt' });
    expect(lines.find((line) => line.msg.includes('saved lexical index not used'))?.obj).toMatchObject({
      reason: expect.stringMatching(/SHA-256 differs/),
    });
    expect(await corpus.searchLexical('protein cell', 12)).toEqual(expected);
    await corpus.close();
  });

  it('a corrupt index file is rebuilt from the store, with a log line', async () => {
    let corpus = await open('corrupt');
    await corpus.add(docs(8), { chunk: false, contextual: false });
    await corpus.close();
    const file = readdirSync(join(ROOT, 'corrupt')).find((name) => name.endsWith('.hnsw'))!;
    writeFileSync(join(ROOT, 'corrupt', file), 'garbage');
    lines.length = 0;
    corpus = await open('corrupt');
    expect(await corpus.stats()).toMatchObject({ documents: 8, dense: 8, lexical: 8 });
    expect(lines.some((line) => line.msg.includes('rebuilding it from the store'))).toBe(true);
    await corpus.close();
  });

  it('an index file damaged mid-file (bytes overwritten in place) is never loaded: discarded, logged, rebuilt', async () => {
    let corpus = await open('damaged-mid');
    await corpus.add(docs(40), { chunk: false, contextual: false });
    await corpus.close();
    const dir = join(ROOT, 'damaged-mid');
    const file = join(
      dir,
      readdirSync(dir).find((name) => name.endsWith('.hnsw'))!,
    );
    const bytes = readFileSync(file);
    bytes.fill(0xff, bytes.length >> 1, (bytes.length >> 1) + 64);
    writeFileSync(file, bytes);
    lines.length = 0;
    corpus = await open('damaged-mid');
    expect(await corpus.stats()).toMatchObject({ documents: 40, dense: 40, lexical: 40 });
    expect(lines.find((line) => line.msg === 'saved dense index discarded')?.obj).toMatchObject({
      reason: expect.stringContaining('damaged') as unknown,
    });
    // Every stored vector finds its own document first: no point was lost or scrambled.
    for (const chunk of corpus.store.chunks()) {
      const [best] = await corpus.searchDense(chunk.vector, 1);
      expect(best?.label).toBe(chunk.label);
    }
    await corpus.close();
  });

  it('a dense index whose sum is missing, or which holds fewer vectors than the store, is rebuilt', async () => {
    let corpus = await open('unsummed');
    await corpus.add(docs(6), { chunk: false, contextual: false });
    await corpus.close();
    const dir = join(ROOT, 'unsummed');
    for (const name of readdirSync(dir)) if (name.endsWith('.sum')) rmSync(join(dir, name));
    corpus = await open('unsummed');
    expect(await corpus.stats()).toMatchObject({ documents: 6, dense: 6 });
    await corpus.close();
  });

  it('an index file (with its sum) from another data dir is never loaded, even with the same seq and count', async () => {
    for (const name of ['mine', 'theirs']) {
      const corpus = await open(name);
      await corpus.add(docs(12, name), { chunk: false, contextual: false });
      await corpus.close();
    }
    // Theirs in place of mine: the same seq and count, from another store.
    for (const name of readdirSync(join(ROOT, 'mine')).filter((file) => /^dense-/.test(file)))
      rmSync(join(ROOT, 'mine', name));
    for (const name of readdirSync(join(ROOT, 'theirs')).filter((file) => /^dense-/.test(file)))
      cpSync(join(ROOT, 'theirs', name), join(ROOT, 'mine', name));
    lines.length = 0;
    const corpus = await open('mine');
    expect(lines.find((line) => line.msg === 'saved dense index discarded')?.obj).toMatchObject({
      reason: expect.stringContaining('another store') as unknown,
    });
    for (const chunk of corpus.store.chunks())
      expect((await corpus.searchDense(chunk.vector, 1))[0]?.label).toBe(chunk.label);
    await corpus.close();
  });

  it("rows relabelled under a saved index (its labels no longer the store's) make it rebuilt, not half-used", async () => {
    let corpus = await open('relabelled');
    await corpus.add(docs(8), { chunk: false, contextual: false });
    await corpus.close();
    const db = new Database(join(ROOT, 'relabelled', 'corpus.sqlite'));
    db.prepare("UPDATE chunks SET label = label + 1000000 WHERE doc_id = 'doc-3'").run();
    db.close();
    lines.length = 0;
    corpus = await open('relabelled');
    expect(lines.some((line) => line.msg === 'dense index disagrees with the store; rebuilding')).toBe(true);
    for (const chunk of corpus.store.chunks())
      expect((await corpus.searchDense(chunk.vector, 1))[0]?.label).toBe(chunk.label);
    await corpus.close();
  });

  it('rows relabelled keeping their count and the sum of their labels are caught too: the index is rebuilt', async () => {
    let corpus = await open('relabelled-same-sum');
    await corpus.add(docs(8), { chunk: false, contextual: false });
    await corpus.close();
    const db = new Database(join(ROOT, 'relabelled-same-sum', 'corpus.sqlite'));
    // Two labels a and b become 0 and a + b: the same count and sum, another set.
    const labelOf = (id: string) => db.prepare('SELECT label FROM chunks WHERE doc_id = ?').pluck().get(id) as number;
    const [a, b] = [labelOf('doc-6'), labelOf('doc-7')];
    db.prepare("UPDATE chunks SET label = ? WHERE doc_id = 'doc-7'").run(a + b);
    db.prepare("UPDATE chunks SET label = 0 WHERE doc_id = 'doc-6'").run();
    db.close();
    lines.length = 0;
    corpus = await open('relabelled-same-sum');
    expect(lines.some((line) => line.msg === 'dense index disagrees with the store; rebuilding')).toBe(true);
    for (const chunk of corpus.store.chunks())
      expect((await corpus.searchDense(chunk.vector, 1))[0]?.label).toBe(chunk.label);
    await corpus.close();
  });

  it.each([
    ['a sum of null', (dir: string, hnsw: string) => writeFileSync(join(dir, hnsw.replace('.hnsw', '.sum')), 'null')],
    [
      'a directory for the sum',
      (dir: string, hnsw: string) => {
        rmSync(join(dir, hnsw.replace('.hnsw', '.sum')));
        mkdirSync(join(dir, hnsw.replace('.hnsw', '.sum')));
      },
    ],
    [
      'a directory for the index file',
      (dir: string, hnsw: string) => {
        rmSync(join(dir, hnsw));
        mkdirSync(join(dir, hnsw));
      },
    ],
    ['a directory named like a save cut short', (dir: string) => mkdirSync(join(dir, 'dense-99.hnsw.tmp'))],
  ])('%s beside the index is ignored: the index is rebuilt and the corpus serves', async (_name, harm) => {
    const dir = `odd-${_name.replace(/ /g, '-')}`;
    let corpus = await open(dir);
    await corpus.add(docs(5), { chunk: false, contextual: false });
    await corpus.close();
    harm(
      join(ROOT, dir),
      readdirSync(join(ROOT, dir)).find((name) => name.endsWith('.hnsw'))!,
    );
    corpus = await open(dir);
    expect(corpus.health()).toEqual({ ready: true });
    expect(await corpus.stats()).toMatchObject({ documents: 5, dense: 5 });
    await corpus.close();
  });

  it('a store written by a newer rcp-server (its schema ahead of this one) is refused, naming both', async () => {
    const corpus = await open('newer-schema');
    await corpus.add(docs(2), { chunk: false, contextual: false });
    await corpus.close();
    const db = new Database(join(ROOT, 'newer-schema', 'corpus.sqlite'));
    db.prepare("UPDATE meta SET value = '99' WHERE key = 'schema'").run();
    db.close();
    expect(() => new Corpus(settings('newer-schema'), encoder, log)).toThrow(/store schema 99, newer than this/);
  });

  it("a write sequence behind the store's rows is refused (it would number two corpora alike)", async () => {
    const corpus = await open('seq-behind');
    for (let i = 0; i < 3; i++) await corpus.add(docs(2, `w${i}`), { chunk: false, contextual: false });
    await corpus.close();
    const db = new Database(join(ROOT, 'seq-behind', 'corpus.sqlite'));
    db.prepare("UPDATE meta SET value = '1' WHERE key = 'seq'").run();
    db.close();
    expect(() => new Corpus(settings('seq-behind'), encoder, log)).toThrow(/write sequence \(1\) is damaged/);
  });

  it.each([
    ['empty', (file: string) => truncateSync(file, 0), /missing or empty/],
    ['missing', (file: string) => rmSync(file), /missing or empty/],
    ['cut in half', (file: string) => truncateSync(file, statSync(file).size >> 1), /damaged|cannot be opened/],
    ['with a garbled header', (file: string) => garble(file, 0, 100), /cannot be opened|damaged/],
  ])(
    'a store %s where the dir held a corpus is refused with one line, and nothing is deleted',
    async (name, harm, message) => {
      const dir = `store-${name.replace(/ /g, '-')}`;
      const corpus = await open(dir);
      await corpus.add(docs(30), { chunk: false, contextual: false });
      await corpus.close();
      const before = readdirSync(join(ROOT, dir)).sort();
      harm(join(ROOT, dir, 'corpus.sqlite'));
      expect(() => new Corpus(settings(dir), encoder, log)).toThrow(message);
      const after = readdirSync(join(ROOT, dir)).sort();
      expect(after.filter((file) => file.endsWith('.hnsw'))).toEqual(before.filter((file) => file.endsWith('.hnsw')));
    },
  );

  it('a store row damaged inside its payload (text bytes changed in place) is found by the scrub once serving: fatal, -32010', async () => {
    let corpus = await open('row-damage');
    await corpus.add([{ id: 'only', text: 'a distinctive sentence about zebrafish hearts' }], {
      chunk: false,
      contextual: false,
    });
    await corpus.close();
    const file = join(ROOT, 'row-damage', 'corpus.sqlite');
    const bytes = readFileSync(file);
    const at = bytes.indexOf('zebrafish');
    bytes.write('zebraFISH', at); // the document row, then its chunk's copy of the text
    bytes.write('zebraFISH', bytes.indexOf('zebrafish', at + 1));
    writeFileSync(file, bytes);
    corpus = new Corpus(settings('row-damage'), encoder, log);
    await corpus.ready;
    // The start read no row it did not need (the saved lexical index covers this chunk): served until checked.
    expect(corpus.fatal).toBeUndefined();
    await corpus.checked;
    expect(corpus.fatal).toMatch(/chunk \d+ is damaged \(its contents do not match their sum\)/);
    expect(await corpus.damaged).toBe(corpus.fatal);
    await expect(corpus.searchLexical('zebrafish', 1)).rejects.toMatchObject({ code: -32010 });
    await corpus.close();
  });

  it('a hit whose row is damaged is refused as it is read (-32010), and the store is then damaged for every call', async () => {
    let corpus = await open('hit-damage');
    await corpus.add([{ id: 'only', text: 'a distinctive sentence about axolotl gills' }], {
      chunk: false,
      contextual: false,
    });
    await corpus.close();
    const file = join(ROOT, 'hit-damage', 'corpus.sqlite');
    const bytes = readFileSync(file);
    bytes.write('axoLOTL', bytes.lastIndexOf('axolotl')); // the chunk's copy of the text
    writeFileSync(file, bytes);
    corpus = new Corpus(settings('hit-damage'), encoder, log);
    await corpus.ready;
    const [hit] = await corpus.searchLexical('axolotl', 1);
    expect(() => corpus.getChunk(hit!.label)).toThrow(expect.objectContaining({ code: -32010 }));
    expect(corpus.fatal).toMatch(/is damaged \(its contents do not match their sum\)/);
    await corpus.close();
  });

  it('refuses to open a data dir embedded with another encoder (a start-up error, not silent garbage)', async () => {
    const corpus = await open('identity');
    await corpus.add(docs(1), { chunk: false, contextual: false });
    await corpus.close();
    const other = { ...encoder, info: { ...encoder.info, identity: 'someone/else#000000000000' } };
    expect(() => new Corpus(settings('identity'), other as unknown as typeof encoder, log)).toThrow(CorpusError);
  });

  it('§7.7.1 without snapshots serves only the current indexVersion: a pin to another fails with -32010, never a different corpus', async () => {
    const corpus = await open('versions');
    const { indexVersion } = await corpus.add(docs(1), { chunk: false, contextual: false });
    expect(await corpus.at(undefined)).toBe(corpus);
    expect(await corpus.at(indexVersion)).toBe(corpus);
    await corpus.add(docs(1, 'next'), { chunk: false, contextual: false });
    await expect(corpus.at(indexVersion)).rejects.toMatchObject({ code: -32010, data: { retryable: false } });
    // A version ahead of this process (another process of the dir wrote it) will be reached: a retry may succeed.
    await expect(corpus.at('99')).rejects.toMatchObject({ code: -32010, data: { retryable: true } });
    await corpus.close();
  });

  it('chunk + contextual: long documents become overlapping chunks; context is title and heading', async () => {
    const corpus = await open('chunks');
    const text = `# Blood\n\n${'The protein level in blood rises. '.repeat(12)}\n\n# Brain\n\nThe brain cells decrease.`;
    const result = await corpus.add([{ id: 'long', text, meta: { title: 'A study' } }], {
      chunk: true,
      contextual: true,
    });
    expect(result.chunks).toBeGreaterThan(2);
    expect(await corpus.stats()).toMatchObject({ chunks: result.chunks, dense: result.chunks, lexical: result.chunks });
    await corpus.close();
  });
});

describe('chunking', () => {
  const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

  it('ends chunks on sentence boundaries within the limit, overlapping by one sentence', async () => {
    const sentences = Array.from({ length: 10 }, (_, i) => `Sentence number ${i} has six words.`);
    const chunks = await chunkText(sentences.join(' '), words, 20);
    for (const chunk of chunks) {
      expect(words(chunk.text)).toBeLessThanOrEqual(20);
      expect(chunk.text.endsWith('.')).toBe(true);
    }
    for (let i = 1; i < chunks.length; i++) {
      const previousLast = chunks[i - 1]!.text.split('. ').at(-1)!;
      expect(chunks[i]!.text.startsWith(previousLast.replace(/\.$/, ''))).toBe(true);
    }
    expect(sentences.every((s) => chunks.some((chunk) => chunk.text.includes(s)))).toBe(true);
  });

  it('cuts a sentence longer than the limit at word boundaries, each window as long as fits', async () => {
    const chunks = await chunkText(`${'word '.repeat(50)}end.`, words, 12);
    expect(chunks.length).toBeGreaterThan(4);
    for (const chunk of chunks) expect(words(chunk.text)).toBeLessThanOrEqual(12);
    expect(words(chunks[0]!.text)).toBe(12);
  });

  it('cuts a sentence of 100,000 words counting O(n log w) characters, not a count per word of its window', async () => {
    let counted = 0;
    const counting = (text: string) => {
      counted += text.length;
      return words(text);
    };
    const text = 'a '.repeat(100_000);
    const chunks = await chunkText(text, counting, 128);
    expect(chunks.length).toBeGreaterThan(700);
    for (const chunk of chunks) expect(words(chunk.text)).toBeLessThanOrEqual(128);
    // A count per word of a growing window would read about 128 / 2 × the text; galloping reads a few × log w.
    expect(counted).toBeLessThan(text.length * 30);
  });

  it('segments in bounded windows: 250,000 newlines or 80,000 sentences cost ten times a tenth of them, not a hundred', async () => {
    const segment = async (scale: number) => {
      const started = performance.now();
      expect(await chunkText(`${'\n'.repeat(250_000 * scale)}x`, words, 128)).toHaveLength(1);
      const sentences = 'Hello world. '.repeat(80_000 * scale);
      const chunks = await chunkText(sentences, words, 128);
      expect(chunks.map((chunk) => chunk.text).join(' ').length).toBeGreaterThanOrEqual(sentences.trim().length);
      return performance.now() - started;
    };
    const tenth = await segment(0.1);
    const whole = await segment(1);
    // Segmenting either whole took over a minute (Intl.Segmenter's iteration is quadratic in its segments): a hundred
    // times a tenth. Linear is ten times; measured in the same run, so a loaded machine slows both alike.
    expect(whole).toBeLessThan(40 * Math.max(tenth, 20));
  });

  it('starts a new chunk at each markdown heading and records the path of headings above it', async () => {
    const text = '# Intro\nFirst part.\n\n## Methods\nSecond part.';
    const chunks = await chunkText(text, words, 100);
    expect(chunks).toEqual([
      { text: 'First part.', headings: ['Intro'], start: 8, end: 19 },
      { text: 'Second part.', headings: ['Intro', 'Methods'], start: 32, end: 44 },
    ]);
  });

  it('chunks a text of 60,000 headings in time linear in them: ten times the headings cost about ten times', async () => {
    const chunked = async (headings: number) => {
      const started = performance.now();
      const chunks = await chunkText(`${'# h\n'.repeat(headings)}\nSome prose.`, words, 100);
      expect(chunks).toHaveLength(1);
      return performance.now() - started;
    };
    const tenth = await chunked(6_000);
    const whole = await chunked(60_000);
    // Each section's heading path read by walking every heading before it made this a hundred times (11 s for the
    // whole); linear is ten. Measured in the same run, so a loaded machine slows both alike.
    expect(whole).toBeLessThan(40 * Math.max(tenth, 20));
  });

  it("cuts at page breaks and says each chunk's page; a # in fenced code is no heading", async () => {
    const text = '# Guide\nOne.\n\f\n```\n# code\n```\nTwo.\n\f\n## Later\nThree.';
    const chunks = await chunkText(text, words, 100);
    expect(chunks.map(({ text, headings, page }) => ({ text, headings, page }))).toEqual([
      { text: 'One.', headings: ['Guide'], page: 1 },
      { text: '```\n# code\n```\nTwo.', headings: ['Guide'], page: 2 },
      { text: 'Three.', headings: ['Guide', 'Later'], page: 3 },
    ]);
    for (const chunk of chunks) expect(text.slice(chunk.start, chunk.end)).toBe(chunk.text);
  });

  it('every chunk is a verbatim slice of its document at its offsets (citations point at exact characters)', async () => {
    const text = `# Title\n\n${'Alpha beta gamma.  Delta\nepsilon zeta. '.repeat(15)}\n## Next\n${'word '.repeat(60)}end.`;
    for (const chunk of await chunkText(text, words, 12)) expect(text.slice(chunk.start, chunk.end)).toBe(chunk.text);
  });
});
