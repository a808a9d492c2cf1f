import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { turnsDuring } from '../../../helpers/pinging.js';
import { CorpusStore, type NewDocument } from '../../../../src/corpus/store/corpus-store.js';

const ROOT = mkdtempSync(join(tmpdir(), 'rcp-store-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));

/** Documents of about `bytes` each, one chunk apiece: large enough that writing them takes several time slices. */
function documents(count: number, bytes: number, prefix: string): NewDocument[] {
  const text = 'lorem ipsum dolor sit amet '.repeat(Math.ceil(bytes / 27)).slice(0, bytes);
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}${i}`,
    text,
    meta: {},
    hash: `h${i}`,
    origin: 'client' as const,
    chunks: [{ text, context: '', start: 0, end: text.length, vector: new Float32Array(8).fill(i) }],
  }));
}

describe('CorpusStore writes (docs/architecture.md §10: writes off the event loop)', () => {
  it('gives the event loop back during a large write, and reads meanwhile see only what is committed', async () => {
    const store = new CorpusStore(join(ROOT, 'sliced'));
    try {
      const before = await store.upsert(documents(1, 100, 'small'));
      const seen: { first: boolean; last: boolean; seq: number }[] = [];
      const ticker = setInterval(() => {
        const present = (id: string) => store.getDocument(id) !== undefined;
        seen.push({ first: present('big0'), last: present('big23'), seq: store.seq });
      }, 1);
      const write = await store.upsert(documents(24, 1024 * 1024, 'big'));
      clearInterval(ticker);
      // Timers ran while the write was under way (a write on the event loop, 24 MB in one transaction, lets none)...
      expect(seen.length).toBeGreaterThan(0);
      // ...and each read saw the store before the write or after it, whole: never a part of it.
      const untouched = { first: false, last: false, seq: before.seq };
      const after = { first: true, last: true, seq: write.seq };
      for (const s of seen) expect([untouched, after]).toContainEqual(s);
      expect(store.seq).toBe(write.seq);
      expect(store.getDocument('big23')?.text.length).toBe(1024 * 1024);
    } finally {
      await store.close();
    }
  });

  it('a write of many chunks is read back a page at a time, the event loop served between pages (docs/architecture.md §9)', async () => {
    const store = new CorpusStore(join(ROOT, 'paged-read'));
    try {
      const write = await store.upsert(documents(5_000, 64, 'many'));
      const { answer: read, turns } = await turnsDuring(() => store.writeOf(write.seq));
      expect(read.added.map((chunk) => chunk.docId)).toEqual(Array.from({ length: 5_000 }, (_, i) => `many${i}`));
      expect(read.written).toHaveLength(5_000);
      // Five pages of 1,024 rows: other callbacks ran between them (a read in one step lets none).
      expect(turns).toBeGreaterThanOrEqual(4);
    } finally {
      await store.close();
    }
  });

  it('a write that fails part-way leaves nothing behind, and the next write takes the next seq (§7.10)', async () => {
    const store = new CorpusStore(join(ROOT, 'rollback'));
    try {
      const first = await store.upsert(documents(1, 100, 'a'));
      const broken = documents(3, 1000, 'b');
      // A vector the driver cannot bind fails the third document's insert, after two were written in the transaction.
      (broken[2]!.chunks[0] as { vector: unknown }).vector = { not: 'a vector' };
      await expect(store.upsert(broken)).rejects.toThrow();
      expect(store.getDocument('b0')).toBeUndefined();
      expect(store.seq).toBe(first.seq);
      const next = await store.upsert(documents(1, 100, 'c'));
      expect(next.seq).toBe(first.seq + 1);
    } finally {
      await store.close();
    }
  });
});
