import { describe, expect, it } from 'vitest';
import { ChunkPlaces } from '../../../src/corpus/chunk-places.js';

describe('ChunkPlaces: where each chunk sits, by label (docs/architecture.md §5)', () => {
  it('answers what was set, forgets what was deleted, and counts the chunks placed', () => {
    const places = new ChunkPlaces();
    places.set(1, 'a', 0);
    places.set(2, 'a', 1);
    places.set(5000, 'b', 0);
    expect(places.size).toBe(3);
    expect(places.get(2)).toEqual({ docId: 'a', ordinal: 1 });
    expect(places.docOf(5000)).toBe('b');
    expect(places.get(3)).toBeUndefined();
    expect(places.delete(2)).toBe(true);
    expect(places.delete(2)).toBe(false);
    expect(places.get(2)).toBeUndefined();
    expect(places.size).toBe(2);
    expect([...places.entries()]).toEqual([
      [1, 'a'],
      [5000, 'b'],
    ]);
  });

  it("a chunk placed again keeps its document's metadata and origin (a start places the chunks after a save twice)", () => {
    const places = new ChunkPlaces();
    places.setDocument('one-chunk', { tag: 'b' }, 'operator');
    places.set(9, 'one-chunk', 0);
    places.set(9, 'one-chunk', 0);
    expect(places.size).toBe(1);
    expect(places.metaOf('one-chunk')).toEqual({ tag: 'b' });
    expect(places.originOf('one-chunk')).toBe('operator');
  });

  it('a label set again takes its new place, counted once', () => {
    const places = new ChunkPlaces();
    places.set(7, 'a', 0);
    places.set(7, 'b', 3);
    expect(places.size).toBe(1);
    expect(places.get(7)).toEqual({ docId: 'b', ordinal: 3 });
    expect([...places.entries()]).toEqual([[7, 'b']]);
  });

  it("frees a document's number with its last chunk: a new document takes it, the old id is gone", () => {
    const places = new ChunkPlaces();
    places.set(1, 'old', 0);
    places.set(2, 'old', 1);
    places.delete(1);
    expect(places.docOf(2)).toBe('old');
    places.delete(2);
    places.set(3, 'new', 0);
    places.set(4, 'old', 0);
    expect([...places.entries()]).toEqual([
      [3, 'new'],
      [4, 'old'],
    ]);
  });

  it("keeps a document's metadata and origin while it has chunks, set before or after them; forgets them with its last", () => {
    const places = new ChunkPlaces();
    // A start reads the documents first, a write places the chunks first.
    places.setDocument('read-first', { lang: 'en' }, 'operator');
    places.set(1, 'read-first', 0);
    places.set(2, 'placed-first', 0);
    places.setDocument('placed-first', {}, 'client');
    expect(places.metaOf('read-first')).toEqual({ lang: 'en' });
    expect(places.originOf('read-first')).toBe('operator');
    expect(places.metaOf('placed-first')).toEqual({});
    expect(places.originOf('placed-first')).toBe('client');
    expect(places.metaOf('unknown')).toEqual({});
    expect(places.originOf('unknown')).toBe('client');
    places.delete(1);
    // Its number goes to the next new document, which starts without the old one's metadata and origin.
    expect(places.metaOf('read-first')).toEqual({});
    expect(places.originOf('read-first')).toBe('client');
    places.set(3, 'next', 0);
    expect(places.metaOf('next')).toEqual({});
    expect(places.originOf('next')).toBe('client');
  });

  it('holds labels past 2³² and far apart, each in its own page, and drops a page once empty', () => {
    const places = new ChunkPlaces();
    const far = 2 ** 40 + 17;
    places.set(far, 'x', 2);
    places.set(3, 'y', 0);
    expect(places.get(far)).toEqual({ docId: 'x', ordinal: 2 });
    expect(places.get(far - 2 ** 32)).toBeUndefined();
    expect([...places.entries()].map(([label]) => label).sort((a, b) => a - b)).toEqual([3, far]);
    places.delete(far);
    expect(places.size).toBe(1);
    expect([...places.entries()]).toEqual([[3, 'y']]);
  });

  it('matches a Map over a random run of sets and deletes', () => {
    const places = new ChunkPlaces();
    const model = new Map<number, { docId: string; ordinal: number }>();
    let seed = 42;
    const random = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n);
    for (let step = 0; step < 20_000; step++) {
      const label = random(30_000);
      if (random(3) === 0) {
        expect(places.delete(label)).toBe(model.delete(label));
      } else {
        const place = { docId: `d${random(500)}`, ordinal: random(8) };
        places.set(label, place.docId, place.ordinal);
        model.set(label, place);
      }
    }
    expect(places.size).toBe(model.size);
    for (const [label, place] of model) expect(places.get(label)).toEqual(place);
    expect(new Map(places.entries())).toEqual(new Map([...model].map(([label, { docId }]) => [label, docId])));
  });
});
