/**
 * Cooperative time slicing for CPU-bound loops on the event loop (DESIGN §5b): `await slice.due()` inside the loop
 * yields to other work (I/O, other clients' requests, timers) once the current slice has run `budgetMs`, and throws
 * the signal's reason if the request was cancelled or timed out meanwhile. A loop that checks it holds the loop for
 * at most about one budget at a time, whatever its input size.
 */
export class TimeSlice {
  #started = performance.now();

  constructor(
    private readonly budgetMs = 8,
    private readonly signal?: AbortSignal,
  ) {}

  /** Resolves at once while the slice has time left; else after one turn of the event loop. */
  async due(): Promise<void> {
    if (performance.now() - this.#started < this.budgetMs) return;
    await new Promise((resolve) => setImmediate(resolve));
    this.signal?.throwIfAborted();
    this.#started = performance.now();
  }
}
