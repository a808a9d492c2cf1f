import { callerScoped } from '../protocol/context.js';
import { setMostRecent } from '../protocol/lru-map.js';

/**
 * §7.7.3 `sessionId`: hits already returned in the same agentic trajectory are skipped by later retrieves. Memory is
 * bounded in bytes as well as in counts (§15.5): sessions expire `ttlSeconds` after their last use, each remembers at
 * most `maxHits` ids, and the least recently used sessions are forgotten past `maxSessions` or `maxBytes` in all.
 *
 * Sessions belong to callers (§15.6): the same `sessionId` from two callers is two sessions, and past a bound the
 * caller holding the most sessions (or bytes) loses its least recently used session first, so one caller cycling sessionIds
 * forgets its own, not everyone's.
 *
 * Each remembered id carries the serial of when it was first returned (one counter for the process, so serials never
 * repeat). A paginated retrieve (§10) skips only what was returned before its first page — `seenBefore(mark)` — so
 * its own earlier pages are skipped by the cursor's offset, not a second time by the session.
 */
interface Remembered {
  readonly caller: string;
  /** id → serial of its first return. */
  readonly seen: Map<string, number>;
  expires: number;
  bytes: number;
}

/** What a retrieve skips: ids returned before `mark`. */
export interface SeenIds {
  readonly mark: number;
  /** How many ids that is. */
  readonly size: number;
  has(id: string): boolean;
}

/**
 * Where §7.7.3 sessions are remembered: this process (SessionDedup), or the store of record that replicas behind one
 * load balancer share (a session's next retrieve may reach another replica).
 */
export interface SeenStore {
  seen(caller: string, sessionId: string, mark?: number): SeenIds | Promise<SeenIds>;
  remember(caller: string, sessionId: string, ids: readonly string[]): void | Promise<void>;
}

/** What one remembered id costs beyond its characters (set slot, string header), roughly. */
const ENTRY_BYTES = 64;

export class SessionDedup implements SeenStore {
  /** Every session, least recently used first. */
  readonly #sessions = new Map<string, Remembered>();
  /** Sessions and bytes held per caller. */
  readonly #held = new Map<string, { sessions: number; bytes: number }>();
  #bytes = 0;
  #serial = 0;

  constructor(
    readonly ttlSeconds: number,
    private readonly maxSessions = 10_000,
    private readonly maxHits = 10_000,
    private readonly maxBytes = 64 * 1024 * 1024,
  ) {}

  /** Bytes held now, roughly (a metric and a test's view). */
  get bytes(): number {
    return this.#bytes;
  }

  /** The ids this caller's session returned before `mark` (a cursor's), or before now for a first page. */
  seen(caller: string, sessionId: string, mark = this.#serial): SeenIds {
    const key = callerScoped(caller, sessionId);
    const session = this.#sessions.get(key);
    if (session === undefined || session.expires < Date.now()) this.#forget(key);
    const seen = this.#sessions.get(key)?.seen ?? new Map<string, number>();
    return {
      mark,
      has: (id) => (seen.get(id) ?? mark) < mark,
      get size() {
        return [...seen.values()].filter((serial) => serial < mark).length;
      },
    };
  }

  remember(caller: string, sessionId: string, ids: readonly string[]): void {
    const now = Date.now();
    const key = callerScoped(caller, sessionId);
    const live = this.#sessions.get(key);
    const session =
      live !== undefined && live.expires >= now
        ? live
        : { caller, seen: new Map<string, number>(), expires: 0, bytes: 0 };
    this.#forget(key); // its count and bytes are taken back, then added again as it is now
    for (const id of ids) {
      if (session.seen.size >= this.maxHits || session.seen.has(id)) continue;
      session.seen.set(id, this.#serial++);
      session.bytes += ENTRY_BYTES + 2 * id.length;
    }
    session.expires = now + this.ttlSeconds * 1000;
    setMostRecent(this.#sessions, key, session);
    this.#account(caller, 1, session.bytes);
    for (;;) {
      const over =
        this.#sessions.size > this.maxSessions ? 'sessions' : this.#bytes > this.maxBytes ? 'bytes' : undefined;
      const victim = over === undefined ? undefined : this.#oldestOfLargestCaller(over, key);
      if (victim === undefined) break; // within bounds, or the session just used is all there is
      this.#forget(victim);
    }
  }

  /** The least recently used session of the caller holding the most sessions (or bytes), never `keep`. */
  #oldestOfLargestCaller(measure: 'sessions' | 'bytes', keep: string): string | undefined {
    let largest: string | undefined;
    let most = -1;
    for (const [caller, held] of this.#held) if (held[measure] > most) [largest, most] = [caller, held[measure]];
    for (const [key, session] of this.#sessions) if (session.caller === largest && key !== keep) return key;
    for (const key of this.#sessions.keys()) if (key !== keep) return key;
    return undefined;
  }

  #account(caller: string, sessions: number, bytes: number): void {
    this.#bytes += bytes;
    const held = this.#held.get(caller) ?? { sessions: 0, bytes: 0 };
    held.sessions += sessions;
    held.bytes += bytes;
    if (held.sessions > 0) this.#held.set(caller, held);
    else this.#held.delete(caller);
  }

  #forget(key: string): void {
    const session = this.#sessions.get(key);
    if (session === undefined) return;
    this.#account(session.caller, -1, -session.bytes);
    this.#sessions.delete(key);
  }
}
