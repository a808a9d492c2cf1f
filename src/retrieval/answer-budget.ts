import { RpcError } from '../protocol/errors.js';

/**
 * Bytes of hits being assembled into answers at once, across every request (§15.5). Thirty requests for 20 MB of
 * hit text each would otherwise hold 600 MB before the first is written; past the budget a request that needs more
 * is answered -32011 (retry later) instead. A request may always take its first bytes when nothing is held, so one
 * answer up to the size cap always goes through.
 */
export class AnswerBudget {
  #held = 0;

  constructor(private readonly maxBytes: number) {}

  /** A reservation for one answer: `take` more bytes as hits are built, `release` once the answer is done. */
  open(): { take(bytes: number): void; release(): void } {
    let mine = 0;
    return {
      take: (bytes) => {
        if (this.#held > mine && this.#held + bytes > this.maxBytes) {
          throw RpcError.rateLimited(500, `answers of ${this.#held} bytes are being assembled; retry shortly`);
        }
        this.#held += bytes;
        mine += bytes;
      },
      release: () => {
        this.#held -= mine;
        mine = 0;
      },
    };
  }
}
