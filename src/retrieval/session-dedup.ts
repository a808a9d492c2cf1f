/**
 * §7.7.3 `sessionId`: hits already returned in the same agentic trajectory are skipped by later retrieves. Memory is
 * bounded in bytes as well as in counts (§15.5): sessions expire `ttlSeconds` after their last use, each remembers at
 * most `maxHits` ids, and the least recently used sessions are forgotten past `maxSessions` or `maxBytes` in all.
 *
 * Each remembered id carries the serial of when it was first returned (one counter for the process, so serials never
 * repeat). A paginated retrieve (§10) skips only what was returned before its first page — `seenBefore(mark)` — so
 * its own earlier pages are skipped by the cursor's offset, not a second time by the session.
 */
interface Remembered {
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

/** What one remembered id costs beyond its characters (set slot, string header), roughly. */
const ENTRY_BYTES = 64;

export class SessionDedup {
  readonly #sessions = new Map<string, Remembered>();
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

  /** The ids this session returned before `mark` (a cursor's), or before now for a first page. */
  seen(sessionId: string, mark = this.#serial): SeenIds {
    const session = this.#sessions.get(sessionId);
    if (session === undefined || session.expires < Date.now()) this.#forget(sessionId);
    const seen = this.#sessions.get(sessionId)?.seen ?? new Map<string, number>();
    return {
      mark,
      has: (id) => (seen.get(id) ?? mark) < mark,
      get size() {
        return [...seen.values()].filter((serial) => serial < mark).length;
      },
    };
  }

  remember(sessionId: string, ids: readonly string[]): void {
    const now = Date.now();
    const live = this.#sessions.get(sessionId);
    const session =
      live !== undefined && live.expires >= now ? live : { seen: new Map<string, number>(), expires: 0, bytes: 0 };
    this.#forget(sessionId); // re-inserted below: Map order is recency order
    for (const id of ids) {
      if (session.seen.size >= this.maxHits || session.seen.has(id)) continue;
      session.seen.set(id, this.#serial++);
      session.bytes += ENTRY_BYTES + 2 * id.length;
    }
    session.expires = now + this.ttlSeconds * 1000;
    this.#sessions.set(sessionId, session);
    this.#bytes += session.bytes;
    for (const oldest of this.#sessions.keys()) {
      if (this.#sessions.size <= this.maxSessions && this.#bytes <= this.maxBytes) break;
      if (oldest === sessionId) break; // the session just used stays, even alone over the budget
      this.#forget(oldest);
    }
  }

  #forget(sessionId: string): void {
    const session = this.#sessions.get(sessionId);
    if (session === undefined) return;
    this.#bytes -= session.bytes;
    this.#sessions.delete(sessionId);
  }
}
