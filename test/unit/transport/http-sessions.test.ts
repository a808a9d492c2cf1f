import { afterEach, describe, expect, it, vi } from 'vitest';
import { MethodRegistry } from '../../../src/protocol/registry.js';
import { Session, type SessionOptions } from '../../../src/protocol/session.js';
import { HttpSessionStore, type HttpSessionConfig } from '../../../src/transport/http-sessions.js';

const make = (config: Partial<HttpSessionConfig> = {}) =>
  new HttpSessionStore(
    (options: SessionOptions) =>
      new Session(
        new MethodRegistry(),
        { name: 't', version: '1' },
        { maxBatchSize: 10, requestTimeoutMs: 1000 },
        options,
      ),
    { idleMs: 60_000, maxSessions: 100, maxSessionsPerCaller: 10, ...config },
  );

async function tokenOf(session: unknown): Promise<string> {
  const reply = await (session as Session).handle({ jsonrpc: '2.0', id: 1, method: 'info', params: {} });
  return (reply as unknown as { result: { _meta: { session: string } } }).result._meta.session;
}

describe('§5.2 HTTP session store', () => {
  afterEach(() => vi.useRealTimers());

  it('a request naming no session runs statelessly: a fresh, implicitly initialized session each time', () => {
    const store = make();
    const a = store.resolve(undefined, '10.0.0.1', false) as Session;
    const b = store.resolve(undefined, '10.0.0.1', false) as Session;
    expect(a).toBeInstanceOf(Session);
    expect(a).not.toBe(b);
    expect(a.initialized).toBe(true);
    expect(store.size).toBe(0);
  });

  it('initialize without a session is answered statelessly too: nothing kept, so no flood of them evicts anyone', () => {
    const store = make({ maxSessionsPerCaller: 2 });
    const victim = store.resolve({ name: 'victim' }, 'host', false);
    for (let i = 0; i < 100; i++) expect((store.resolve(undefined, 'host', true) as Session).initialized).toBe(true);
    expect(store.size).toBe(1);
    expect(store.resolve({ name: 'victim' }, 'host', false)).toBe(victim);
  });

  it('past maxSessions the caller holding the most loses one, the opener on a tie, never the smaller caller', () => {
    const store = make({ maxSessions: 4, maxSessionsPerCaller: 3 });
    const kept = [store.resolve({ name: 'a1' }, 'A', false), store.resolve({ name: 'a2' }, 'A', false)];
    for (let i = 0; i < 10; i++) store.resolve({ token: 'new' }, 'B', true);
    expect(store.resolve({ name: 'a1' }, 'A', false)).toBe(kept[0]);
    expect(store.resolve({ name: 'a2' }, 'A', false)).toBe(kept[1]);
  });

  it('a token reaches its session only from the caller that opened it; unknown tokens open one only on initialize', async () => {
    const store = make();
    const opened = store.resolve({ token: 'new' }, 'key:a', true) as Session;
    const token = await tokenOf(opened);
    expect(token).not.toBe('new');
    expect(store.resolve({ token }, 'key:a', false)).toBe(opened);
    expect(store.resolve({ token }, 'key:b', false)).toMatchObject({ code: -32001 });
    expect(store.resolve({ token: 'forged' }, 'key:a', false)).toMatchObject({ code: -32001 });
  });

  it("a named session keeps its lifecycle and is its caller's own", () => {
    const store = make();
    const named = store.resolve({ name: 'conf' }, '10.0.0.1', false) as Session;
    expect(named.initialized).toBe(false);
    expect(store.resolve({ name: 'conf' }, '10.0.0.1', false)).toBe(named);
    expect(store.resolve({ name: 'conf' }, '10.0.0.2', false)).not.toBe(named);
    // A name and a token of the same text are different sessions.
    expect(store.resolve({ token: 'conf' }, '10.0.0.1', false)).toMatchObject({ code: -32001 });
  });

  it("a caller flooding sessions evicts its own, never another caller's (per-caller quota, then the largest holder)", () => {
    const store = make({ maxSessions: 20, maxSessionsPerCaller: 8 });
    const polite = store.resolve({ name: 'mine' }, 'polite', false);
    for (let i = 0; i < 1000; i++) store.resolve({ token: 'new' }, `flooder`, true);
    expect(store.resolve({ name: 'mine' }, 'polite', false)).toBe(polite);
    // Many flooding callers fill the store: the largest holders lose sessions first.
    for (let i = 0; i < 1000; i++) store.resolve({ token: 'new' }, `flooder-${i % 5}`, true);
    expect(store.size).toBeLessThanOrEqual(20);
    expect(store.resolve({ name: 'mine' }, 'polite', false)).toBe(polite);
  });

  it("§15.5 many callers opening one session each cannot push out a caller's few: the store refuses them", () => {
    const store = make({ maxSessions: 5 });
    const victim = store.resolve({ name: 'victim' }, '127.0.0.1', false);
    const answers = Array.from({ length: 6 }, (_, i) => store.resolve({ name: 's' }, `127.0.0.${i + 2}`, false));
    expect(answers.filter((answer) => answer instanceof Session)).toHaveLength(4);
    expect(answers.at(-1)).toMatchObject({ code: -32011 });
    expect(store.resolve({ name: 'victim' }, '127.0.0.1', false)).toBe(victim);
  });

  it('bounds memory: idle sessions expire', () => {
    vi.useFakeTimers();
    const store = make();
    const first = store.resolve({ name: 'a' }, 'a', false);
    vi.advanceTimersByTime(61_000);
    expect(store.resolve({ name: 'a' }, 'a', false)).not.toBe(first);
    expect(store.size).toBe(1);
  });

  it('shutdown ends the session it ran in', async () => {
    const store = make();
    const named = store.resolve({ name: 'x' }, 'a', false) as Session;
    await named.handle({ jsonrpc: '2.0', id: 1, method: 'shutdown', params: {} });
    expect(store.size).toBe(0);
    expect(store.resolve({ name: 'x' }, 'a', false)).not.toBe(named);
  });
});
