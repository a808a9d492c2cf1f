/**
 * Feedback signals (§7.16) kept per session and query: bounded in count and in bytes (oldest dropped first past
 * `maxSignals` or `maxBytes`, §15.5) and expiring (`ttlMs` after they arrived). Advisory data only — nothing in retrieval reads it (§7.16: it MUST NOT alter a
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

/** What one kept signal costs beyond its strings (object, fields, array slot), roughly. */
const SIGNAL_BYTES = 160;

/** A signal's bytes: its strings (UTF-16) and the rest. A call's query is counted with each of its signals. */
const bytesOf = (signal: StoredSignal) =>
  SIGNAL_BYTES + 2 * (signal.hitId.length + (signal.sessionId?.length ?? 0) + (signal.query?.length ?? 0));

export class FeedbackStore {
  readonly #signals: StoredSignal[] = [];
  #bytes = 0;

  constructor(
    private readonly maxSignals: number,
    private readonly ttlMs: number,
    private readonly clock: () => number = Date.now,
    private readonly maxBytes = 64 * 1024 * 1024,
  ) {}

  /** Bytes held now, roughly. */
  get bytes(): number {
    return this.#bytes;
  }

  record(sessionId: string | undefined, query: string | undefined, signals: readonly FeedbackSignal[]): number {
    const at = this.clock();
    this.#expire(at);
    for (const signal of signals) {
      const stored = { ...signal, sessionId, query, at };
      this.#signals.push(stored);
      this.#bytes += bytesOf(stored);
    }
    let over = 0;
    let bytes = this.#bytes;
    while (over < this.#signals.length && (this.#signals.length - over > this.maxSignals || bytes > this.maxBytes))
      bytes -= bytesOf(this.#signals[over++]!);
    this.#drop(over);
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
    this.#drop(stale);
  }

  /** Drops the oldest `count` signals. */
  #drop(count: number): void {
    for (const signal of this.#signals.splice(0, count)) this.#bytes -= bytesOf(signal);
  }
}
