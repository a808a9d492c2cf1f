/**
 * Cooperative time slicing for CPU-bound loops on the event loop (DESIGN §5b): `await slice.due()` inside the loop
 * gives the loop back once the current slice has run `budgetMs`, and throws the signal's reason if the request was
 * cancelled or timed out meanwhile.
 *
 * Slices take turns across every request in the process: each turn of the event loop wakes at most
 * `SLICES_PER_TURN` waiting slices, oldest first, and the loop then serves timers and I/O (other clients, `ping`)
 * before the next turn. So a hundred heavy requests at once slow one another down, not the event loop.
 */
const SLICES_PER_TURN = 2;
const waiting: (() => void)[] = [];
let armed = false;

function wake(): void {
  armed = false;
  for (let i = 0; i < SLICES_PER_TURN && waiting.length > 0; i++) waiting.shift()!();
  arm();
}

function arm(): void {
  if (armed || waiting.length === 0) return;
  armed = true;
  setImmediate(wake);
}

/** Resolves on a later turn of the event loop, when this slice's turn comes. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    arm();
  });
}

export class TimeSlice {
  #started = performance.now();

  constructor(
    private readonly budgetMs = 8,
    private readonly signal?: AbortSignal,
  ) {}

  /** Resolves at once while the slice has time left; else on its next turn. */
  async due(): Promise<void> {
    if (performance.now() - this.#started < this.budgetMs) return;
    await nextTurn();
    this.signal?.throwIfAborted();
    this.#started = performance.now();
  }
}
