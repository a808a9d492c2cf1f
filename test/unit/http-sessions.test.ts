import { afterEach, describe, expect, it, vi } from 'vitest';
import { MethodRegistry } from '../../src/protocol/registry.js';
import { Session, type SessionOptions } from '../../src/protocol/session.js';
import { HttpSessionStore } from '../../src/transport/http-sessions.js';

const make = (mode: 'caller' | 'stateless', maxSessions = 100) =>
  new HttpSessionStore(
    (options: SessionOptions) =>
      new Session(
        new MethodRegistry(),
        { name: 't', version: '1' },
        { maxBatchSize: 10, requestTimeoutMs: 1000 },
        options,
      ),
    { mode, idleMs: 60_000, maxSessions },
  );

describe('§5.2 HTTP session store', () => {
  afterEach(() => vi.useRealTimers());

  it('one shared session per caller; tokens reach the same session; unknown tokens only open one on initialize', () => {
    const store = make('caller');
    const a = store.resolve(undefined, '10.0.0.1', false);
    expect(store.resolve(undefined, '10.0.0.1', false)).toBe(a);
    expect(store.resolve(undefined, '10.0.0.2', false)).not.toBe(a);
    expect(store.resolve('nope', '10.0.0.1', false)).toMatchObject({ code: -32001 });
    const fresh = store.resolve('nope', '10.0.0.1', true);
    expect(fresh).toBeInstanceOf(Session);
    expect(fresh).not.toBe(a);
  });

  it('bounds memory: idle sessions expire and the least recently used go first past maxSessions', () => {
    vi.useFakeTimers();
    const store = make('caller', 2);
    const first = store.resolve(undefined, 'a', false);
    store.resolve(undefined, 'b', false);
    store.resolve(undefined, 'a', false); // a is now the most recent
    store.resolve(undefined, 'c', false); // evicts b
    expect(store.size).toBe(2);
    expect(store.resolve(undefined, 'a', false)).toBe(first);
    vi.advanceTimersByTime(61_000);
    expect(store.resolve(undefined, 'a', false)).not.toBe(first);
    expect(store.size).toBe(1);
  });

  it('stateless sessions start initialized; a stale token falls back to the caller session, never -32001', () => {
    const store = make('stateless');
    const session = store.resolve(undefined, 'a', false);
    expect(session).toBeInstanceOf(Session);
    expect((session as Session).initialized).toBe(true);
    expect(store.resolve('expired-token', 'a', false)).toBe(session);
  });
});
