import { describe, expect, it } from 'vitest';
import { FeedbackStore } from '../../src/retrieval/feedback-store.js';

describe('§7.16 feedback memory', () => {
  it('§15.5 is bounded in bytes: the oldest signals go first, whatever their count', () => {
    const store = new FeedbackStore(1_000_000, 60_000, Date.now, 1_000_000);
    const query = 'q'.repeat(10_000);
    for (let i = 0; i < 500; i++) store.record(`s${i}`, query, [{ hitId: `doc-${i}#0`, used: true }]);
    expect(store.bytes).toBeLessThanOrEqual(1_000_000);
    expect(store.size).toBeLessThan(500);
    expect(store.forSession('s499')).toHaveLength(1);
    expect(store.forSession('s0')).toHaveLength(0);
  });

  it('is bounded in count and expires: what it holds matches its byte count', () => {
    let now = 0;
    const store = new FeedbackStore(3, 1000, () => now);
    store.record('a', 'one', [{ hitId: '1' }, { hitId: '2' }, { hitId: '3' }, { hitId: '4' }]);
    expect(store.size).toBe(3);
    now = 2000;
    expect(store.size).toBe(0);
    expect(store.bytes).toBe(0);
  });
});
