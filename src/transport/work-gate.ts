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
 * joining a queue.
 *
 * The places bound the requests started in one turn of the event loop as well. A sparse retrieve often finishes in
 * the turn that read it, and its place used to be taken again in that same turn: with 64 connections a turn started
 * about 22 requests where 8 connections start 8, so every answer, refused or served, waited a turn three times as
 * long (p50 14 ms against 4 ms, p99 2.6-3.2×). Counting the turn's starts, p99 at 64 connections is 1.1-1.8× that at
 * 8 (`npm run bench -- http`, 2 cores; hybrid 1.5-1.9×).
 *
 * A caller within its fair share (the places divided among the callers holding any) is admitted even when every
 * place is taken, up to twice the places: a client that floods the server takes the places it finds free, but cannot
 * keep a caller with one request waiting out. The same rule holds for the places started this turn.
 */
export class WorkGate {
  readonly #places: number;
  /** Places held, by caller. */
  readonly #byCaller = new Map<string, number>();
  #inFlight = 0;
  /** Requests started in this turn of the event loop, by caller; forgotten at its end (see `#startedInTurn`). */
  readonly #startedByCaller = new Map<string, number>();
  #started = 0;
  /** Exponentially weighted milliseconds a request holds its place: how soon one is likely to free up. */
  #heldMs = 10;

  constructor(places: number) {
    this.#places = places;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * `places` places for `caller` (a batch takes one per member it runs at once, at most all of them), or the -32011 to
   * answer with.
   */
  enter(caller: string, places = 1): WorkTicket | RpcError {
    const weight = Math.min(Math.max(1, places), this.#places);
    const held = this.#byCaller.get(caller) ?? 0;
    const started = this.#startedByCaller.get(caller) ?? 0;
    if (
      this.#full(this.#inFlight, this.#byCaller, held, weight) ||
      this.#full(this.#started, this.#startedByCaller, started, weight)
    ) {
      return this.#busy();
    }
    this.#inFlight += weight;
    this.#byCaller.set(caller, held + weight);
    this.#startedInTurn(caller, started, weight);
    const entered = performance.now();
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#inFlight -= weight;
        const left = (this.#byCaller.get(caller) ?? weight) - weight;
        if (left === 0) this.#byCaller.delete(caller);
        else this.#byCaller.set(caller, left);
        this.#heldMs += (performance.now() - entered - this.#heldMs) / 8;
      },
    };
  }

  /**
   * Whether a caller with `mine` of the `taken` places (`holders`: the callers with any) must wait to take `weight`
   * more: they are not free, and it has its fair share or the places would be taken twice over.
   */
  #full(taken: number, holders: ReadonlyMap<string, number>, mine: number, weight: number): boolean {
    if (taken + weight <= this.#places) return false;
    const callers = holders.size + (mine === 0 ? 1 : 0);
    const share = Math.max(1, Math.floor(this.#places / callers));
    return mine >= share || taken + weight > 2 * this.#places;
  }

  /** Counts `weight` started by `caller` in this turn; the count is forgotten once the turn's immediates run. */
  #startedInTurn(caller: string, before: number, weight: number): void {
    const first = this.#started === 0;
    this.#started += weight;
    if (first) {
      setImmediate(() => {
        this.#started = 0;
        this.#startedByCaller.clear();
      }).unref();
    }
    this.#startedByCaller.set(caller, before + weight);
  }

  /** §15.5: retry once about one request's time has passed: by then a place has usually freed. */
  #busy(): RpcError {
    const retryAfterMs = Math.min(1000, Math.max(5, Math.ceil(this.#heldMs)));
    return RpcError.rateLimited(
      retryAfterMs,
      `server busy: ${this.#inFlight} requests in flight, ${this.#started} started this turn ` +
        `(at most ${this.#places} of each); retry`,
    );
  }
}
