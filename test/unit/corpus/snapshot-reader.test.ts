import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Corpus } from '../../../src/corpus/corpus.js';
import { contentHash } from '../../../src/corpus/index.js';
import { corpusSettings, fixtureEncoder, SILENT } from '../../helpers/test-corpus.js';

/**
 * §7.7.1 the corpus at a version (snapshots/reader.ts) reads rows as the store has committed them: a write committed
 * and not yet applied by this process has moved the version's rows to the removed rows in its transaction, and the
 * version still reads them there, never a missing or newer row. (The wire tests cover the pipeline; this one holds
 * the write between its commit and its apply, which a live server passes through in microseconds.)
 */
const ROOT = mkdtempSync(join(tmpdir(), 'rcp-snapshot-reader-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));

const silent = SILENT;
const encoder = fixtureEncoder(ROOT);
afterAll(() => encoder.close());

const SNAPSHOTS = { versions: 100, maxAgeMs: 86_400_000, maxChunks: 10_000, maxBytes: 64 * 2 ** 20 };

/** No following: the write committed below stays unapplied for the test's length. */
const settings = (dir: string, snapshots = SNAPSHOTS) => corpusSettings(ROOT, dir, { followMs: 60_000, snapshots });

describe('§7.7.1 the corpus at a version, between a write commit and its apply', () => {
  it('reads the chunks, vectors and documents the version held from the removed rows', async () => {
    const corpus = new Corpus(settings('between'), encoder, silent);
    await corpus.ready;
    const texts = ['kinase signal in the cell', 'membrane protein of a neuron'];
    const { indexVersion } = await corpus.add(
      texts.map((text, i) => ({ id: `d${i}`, text })),
      { chunk: false, contextual: false },
    );
    const reader = await corpus.at(indexVersion);
    const labels = await reader.labelsWhere(() => true);
    expect(labels).toHaveLength(2);
    const chunks = labels.map((label) => reader.getChunk(label));
    const vectors = await reader.vectorsOf(labels);
    const documents = ['d0', 'd1'].map((id) => reader.getDocument(id));
    // Committed to the store of record, not applied to this process's indexes.
    const vector = new Float32Array(encoder.info.dimension).fill(0.1);
    await corpus.store.upsert(
      ['d0', 'd1'].map((id) => ({
        id,
        text: `replaced ${id}`,
        meta: {},
        hash: contentHash(`replaced ${id}`, {}, { chunk: false, contextual: false }),
        origin: 'client' as const,
        chunks: [{ text: `replaced ${id}`, context: '', start: 0, end: 11, vector }],
      })),
    );
    expect(corpus.indexVersion).toBe(indexVersion);
    expect(labels.map((label) => reader.getChunk(label))).toEqual(chunks);
    expect(await reader.vectorsOf(labels)).toEqual(vectors);
    expect(labels.map((label) => reader.vectorOf(label))).toEqual(labels.map((label) => vectors.get(label)));
    expect(['d0', 'd1'].map((id) => reader.getDocument(id))).toEqual(documents);
    await corpus.close();
  });

  it('a document given twice in one write keeps the version before it, not the copy that write replaced', async () => {
    const corpus = new Corpus(settings('twice'), encoder, silent);
    await corpus.ready;
    const first = await corpus.add([{ id: 'd', text: 'the first text', meta: { n: 1 } }], {
      chunk: false,
      contextual: false,
    });
    await corpus.add(
      [
        { id: 'd', text: 'a copy in no version', meta: { n: 2 } },
        { id: 'd', text: 'the last text', meta: { n: 3 } },
      ],
      { chunk: false, contextual: false },
    );
    await corpus.close();
    // Read back from the store at a start: the removed rows are the version's.
    const restarted = new Corpus(settings('twice'), encoder, silent);
    await restarted.ready;
    const reader = await restarted.at(first.indexVersion);
    const [label] = await reader.labelsWhere(() => true);
    expect(reader.getChunk(label!)?.text).toBe('the first text');
    expect(reader.metaOf('d')).toEqual({ n: 1 });
    expect(reader.getDocument('d')?.text).toBe('the first text');
    await restarted.close();
  });

  it('keeps at most maxBytes of removed rows, in the store and in memory: the oldest versions leave first', async () => {
    for (const [dir, maxBytes, kept] of [
      ['light', 1_000_000, true],
      ['heavy', 5_000, false],
    ] as const) {
      const corpus = new Corpus(settings(dir, { ...SNAPSHOTS, maxBytes }), encoder, silent);
      await corpus.ready;
      const options = { chunk: false, contextual: false };
      const first = await corpus.add([{ id: 'd', text: 'long '.repeat(600) }], options);
      await corpus.add([{ id: 'd', text: 'short' }], options);
      const pinned = corpus.at(first.indexVersion);
      if (kept) await expect(pinned).resolves.toBeDefined();
      else await expect(pinned).rejects.toMatchObject({ code: -32010, data: { retryable: false } });
      await corpus.close();
      // The store kept as much: a start reads the same window.
      const restarted = new Corpus(settings(dir, { ...SNAPSHOTS, maxBytes: 1_000_000 }), encoder, silent);
      await restarted.ready;
      const again = restarted.at(first.indexVersion);
      if (kept) await expect(again).resolves.toBeDefined();
      else await expect(again).rejects.toMatchObject({ code: -32010 });
      await restarted.close();
    }
  });
});
