/**
 * Feedback signals (§7.16) kept per session and query: bounded (oldest dropped first past `maxSignals`) and expiring
 * (`ttlMs` after they arrived). Advisory data only — nothing in retrieval reads it (§7.16: it MUST NOT alter a
 * concurrent retrieve; §15.2: it is untrusted input, never a control instruction).
 */
export interface FeedbackSignal {
  readonly hitId: string;
  readonly used?: boolean | undefined;
  readonly cited?: boolean | undefined;
  readonly helpful?: boolean | undefined;
  readonly reward?: number | undefined;
  readonly poisonSuspected?: boolean | undefined;
  readonly injectionSuspected?: boolean | undefined;
}

export interface StoredSignal extends FeedbackSignal {
  readonly sessionId: string | undefined;
  readonly query: string | undefined;
  readonly at: number;
}

export class FeedbackStore {
  readonly #signals: StoredSignal[] = [];

  constructor(
    private readonly maxSignals: number,
    private readonly ttlMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  record(sessionId: string | undefined, query: string | undefined, signals: readonly FeedbackSignal[]): number {
    const at = this.clock();
    this.#expire(at);
    for (const signal of signals) this.#signals.push({ ...signal, sessionId, query, at });
    if (this.#signals.length > this.maxSignals) this.#signals.splice(0, this.#signals.length - this.maxSignals);
    return signals.length;
  }

  /** What is kept for a session (or for calls without one), oldest first. */
  forSession(sessionId: string | undefined): StoredSignal[] {
    this.#expire(this.clock());
    return this.#signals.filter((signal) => signal.sessionId === sessionId);
  }

  get size(): number {
    this.#expire(this.clock());
    return this.#signals.length;
  }

  #expire(now: number): void {
    let stale = 0;
    while (stale < this.#signals.length && now - (this.#signals[stale]?.at ?? now) > this.ttlMs) stale++;
    if (stale > 0) this.#signals.splice(0, stale);
  }
}
