/**
 * §7.7.3 `sessionId`: hits already returned in the same agentic trajectory are skipped by later retrieves. Memory is
 * bounded: sessions expire `ttlSeconds` after their last use, the oldest is evicted past `maxSessions`, and each
 * session remembers at most `maxHits` ids.
 */
export class SessionDedup {
  readonly #sessions = new Map<string, { seen: Set<string>; expires: number }>();

  constructor(
    readonly ttlSeconds: number,
    private readonly maxSessions = 10_000,
    private readonly maxHits = 10_000,
  ) {}

  seen(sessionId: string): ReadonlySet<string> {
    const session = this.#sessions.get(sessionId);
    if (session === undefined || session.expires < Date.now()) {
      this.#sessions.delete(sessionId);
      return new Set();
    }
    return session.seen;
  }

  remember(sessionId: string, ids: readonly string[]): void {
    const now = Date.now();
    const session = this.#sessions.get(sessionId);
    const seen = session !== undefined && session.expires >= now ? session.seen : new Set<string>();
    for (const id of ids) if (seen.size < this.maxHits) seen.add(id);
    this.#sessions.delete(sessionId); // re-insert: Map order is recency order
    this.#sessions.set(sessionId, { seen, expires: now + this.ttlSeconds * 1000 });
    while (this.#sessions.size > this.maxSessions) {
      const oldest = this.#sessions.keys().next().value;
      if (oldest === undefined) break;
      this.#sessions.delete(oldest);
    }
  }
}
