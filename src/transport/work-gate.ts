import { RpcError } from '../protocol/errors.js';

/** A place among the work in flight; give it back once the answer is known. */
export interface WorkTicket {
  release(): void;
}

/**
 * The HTTP requests carrying work (anything but the lifecycle) in flight, all callers together (§15.5;
 * `limits.maxWorkInFlight` places). The event loop serves them in turns (protocol/time-slice.ts), so each one
 * admitted past what the process can serve in parallel only adds its own time to everyone's wait: 64 connections of
 * sparse retrieves once waited seconds at p99 (a few clients timed out) where 8 waited 80 ms. Past the places, a
 * request is refused at once with -32011 and a `retryAfterMs` from how long the work in flight is taking, instead of
 * joining a queue. The default, 8, keeps the slowest answers at 64 connections within 3× of those at 8 (measured
 * by `npm run bench -- http` on 2 cores: sparse 2.6-2.7× at 8 places, 3.0-3.3× at 16; hybrid 1.9-2.9× and 2.9-4.6×).
 *
 * A caller within its fair share (the places divided among the callers holding any) is admitted even when every
 * place is taken, up to twice the places: a client that floods the server takes the places it finds free, but cannot
 * keep a caller with one request waiting out.
 */
export class WorkGate {
  readonly #places: number;
  readonly #byCaller = new Map<string, number>();
  #inFlight = 0;
  /** Exponentially weighted milliseconds a request holds its place: how soon one is likely to free up. */
  #heldMs = 10;

  constructor(places: number) {
    this.#places = places;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** A place for `caller`, or the -32011 to answer with. */
  enter(caller: string): WorkTicket | RpcError {
    const held = this.#byCaller.get(caller) ?? 0;
    if (this.#inFlight >= this.#places) {
      const callers = this.#byCaller.size + (held === 0 ? 1 : 0);
      const share = Math.max(1, Math.floor(this.#places / callers));
      if (held >= share || this.#inFlight >= 2 * this.#places) return this.#busy();
    }
    this.#inFlight++;
    this.#byCaller.set(caller, held + 1);
    const entered = performance.now();
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#inFlight--;
        const left = (this.#byCaller.get(caller) ?? 1) - 1;
        if (left === 0) this.#byCaller.delete(caller);
        else this.#byCaller.set(caller, left);
        this.#heldMs += (performance.now() - entered - this.#heldMs) / 8;
      },
    };
  }

  /** §15.5: retry once about one request's time has passed: by then a place has usually freed. */
  #busy(): RpcError {
    const retryAfterMs = Math.min(1000, Math.max(5, Math.ceil(this.#heldMs)));
    return RpcError.rateLimited(
      retryAfterMs,
      `server busy: ${this.#inFlight} requests in flight (at most ${this.#places} at once); retry`,
    );
  }
}
