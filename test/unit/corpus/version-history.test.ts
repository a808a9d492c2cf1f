import { describe, expect, it } from 'vitest';
import { VersionHistory } from '../../../src/corpus/snapshots/history.js';

/** §7.7.1 the history of recent versions (snapshots/history.ts): which versions it serves, and what it may keep. */
const chunk = (removedSeq: number, terms = 1) => ({
  docId: 'd',
  ordinal: 0,
  seq: 1,
  removedSeq,
  counts: new Map(Array.from({ length: terms }, (_, i) => [`t${i}`, 1] as const)),
  length: terms,
});

describe('§7.7.1 VersionHistory', () => {
  it('serves versions from the floor to the current one, but none in a hole', () => {
    const history = new VersionHistory(3, 8);
    history.setHoles([[5, 6]]);
    history.addHole(9);
    expect([2, 3, 4, 5, 6, 7, 8, 9, 10].filter((version) => history.serves(version))).toEqual([3, 4, 7, 8, 10]);
    expect(history.describe(10)).toBe('versions 3 to 10, but not 5-6, 9');
    history.moveFloor(8);
    expect(history.describe(10)).toBe('versions 8 to 10, but not 9');
  });

  it("keeps at most maxChunks removed chunks and maxBytes of them, counting their documents' metadata: the oldest go first", () => {
    const history = new VersionHistory(0, 100);
    for (let seq = 2; seq <= 5; seq++) history.retire(seq, chunk(seq));
    expect(history.crowdedFloor(10, 10_000)).toBe(0);
    expect(history.crowdedFloor(2, 10_000)).toBe(3); // the two newest, removed at 4 and 5, stay
    const metaJson = JSON.stringify({ o: Array.from({ length: 2000 }, () => ({})) });
    history.retireDocument('heavy', { metaJson, origin: 'client', seq: 1, removedSeq: 4 });
    expect(history.crowdedFloor(10, 4 * 164 + metaJson.length)).toBe(4);
  });

  it('lists the chunks written after a version, newest writes first, and forgets those at or below the floor', () => {
    const history = new VersionHistory(0, 8);
    history.added([1, 2], 1);
    history.added([3], 2);
    history.added([4, 5], 3);
    expect([...history.addedAfter(1)].sort()).toEqual([3, 4, 5]);
    expect(history.writtenAt(4)).toBe(3);
    history.moveFloor(2);
    expect(history.writtenAt(3)).toBe(0);
    expect([...history.addedAfter(0)].sort()).toEqual([4, 5]);
  });
});
