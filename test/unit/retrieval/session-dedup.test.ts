import { afterEach, describe, expect, it, vi } from 'vitest';
import { SessionDedup } from '../../../src/retrieval/session-dedup.js';

describe('§7.7.3 session dedup memory', () => {
  afterEach(() => vi.useRealTimers());

  it('remembers returned ids per session until the TTL passes', () => {
    vi.useFakeTimers();
    const sessions = new SessionDedup(60);
    sessions.remember('c', 'a', ['x', 'y']);
    expect(['x', 'y', 'z'].map((id) => sessions.seen('c', 'a').has(id))).toEqual([true, true, false]);
    expect(sessions.seen('c', 'b').size).toBe(0);
    vi.advanceTimersByTime(61_000);
    expect(sessions.seen('c', 'a').size).toBe(0);
  });

  it('is bounded: the least recently used session is evicted, and each session keeps at most maxHits ids', () => {
    const sessions = new SessionDedup(60, 2, 3);
    sessions.remember('c', 'a', ['1']);
    sessions.remember('c', 'b', ['2']);
    sessions.remember('c', 'a', ['3']); // a is now the most recent
    sessions.remember('c', 'c', ['4']); // evicts b
    expect(sessions.seen('c', 'b').size).toBe(0);
    expect(sessions.seen('c', 'a').size).toBe(2);
    expect(['1', '3'].every((id) => sessions.seen('c', 'a').has(id))).toBe(true);
    sessions.remember('c', 'a', ['5', '6', '7']);
    expect(sessions.seen('c', 'a').size).toBe(3);
  });

  it('§15.5 is bounded in bytes: the least recently used sessions go first, the one in use stays', () => {
    const sessions = new SessionDedup(60, 1000, 10_000, 100_000);
    const ids = (session: number) => Array.from({ length: 100 }, (_, i) => `doc-${session}-${i}#0`);
    for (let session = 0; session < 100; session++) sessions.remember('c', `s${session}`, ids(session));
    expect(sessions.bytes).toBeLessThanOrEqual(100_000);
    expect(sessions.seen('c', 's0').size).toBe(0);
    expect(sessions.seen('c', 's99').size).toBe(100);
    sessions.remember('c', 's99', ids(99)); // ids already remembered cost nothing more
    expect(sessions.bytes).toBeLessThanOrEqual(100_000);
  });

  it('§15.6 sessions are per caller: the same sessionId from another caller is another session', () => {
    const sessions = new SessionDedup(60);
    sessions.remember('a', 'shared', ['x']);
    expect(sessions.seen('b', 'shared').has('x')).toBe(false);
    expect(sessions.seen('a', 'shared').has('x')).toBe(true);
  });

  it("§15.5 a caller cycling sessionIds past the bound forgets its own sessions, not another caller's", () => {
    const sessions = new SessionDedup(60, 50);
    sessions.remember('polite', 'mine', ['kept']);
    for (let i = 0; i < 1000; i++) sessions.remember('flooder', `s${i}`, [`id-${i}`]);
    expect(sessions.seen('polite', 'mine').has('kept')).toBe(true);
  });

  it('§10 a paginated retrieve skips what was returned before its first page, not its own earlier pages', () => {
    const sessions = new SessionDedup(60);
    sessions.remember('c', 'a', ['earlier']);
    const first = sessions.seen('c', 'a');
    expect(first.has('earlier')).toBe(true);
    sessions.remember('c', 'a', ['page-1-hit']);
    const later = sessions.seen('c', 'a', first.mark);
    expect([later.has('earlier'), later.has('page-1-hit')]).toEqual([true, false]);
    expect(sessions.seen('c', 'a').has('page-1-hit')).toBe(true);
  });
});
