/**
 * Cooperative time slicing for CPU-bound loops on the event loop (DESIGN §5b): `await slice.due()` inside the loop
 * gives the loop back once the current turn has run sliced work for `budgetMs`, and throws the signal's reason if
 * the request was cancelled or timed out meanwhile.
 *
 * The budget is the turn's, not the slice's: one turn of the event loop runs at most `budgetMs` of sliced work,
 * however many slices it passes through (a retrieve goes from lexical completion to dense completion to packing,
 * each with its own slice: counted apart, one turn ran three budgets, 26 ms). Waiting slices take turns across every
 * request in the process: each turn of the event loop wakes one, oldest first, and the loop then serves timers and
 * I/O (other clients, `ping`) before the next. A hundred heavy requests at once slow one another down, not the loop.
 */
const waiting: (() => void)[] = [];
let armed = false;
/** When this turn began running sliced work; forgotten before the next turn's I/O (see `turnStart`). */
let turnStarted: number | undefined;

/** Whether a zero timer is pending to forget `turnStarted` (one serves every turn that starts before it fires). */
let forgetting = false;

/**
 * Starts the current turn's budget now. A zero timer forgets it: timers run before I/O in each turn of the loop, so
 * the next request's first slice starts afresh (a timer not yet due after under a millisecond leaves it at most that
 * stale).
 */
function startTurn(): number {
  turnStarted = performance.now();
  if (!forgetting) {
    forgetting = true;
    setTimeout(() => {
      forgetting = false;
      turnStarted = undefined;
    }, 0).unref();
  }
  return turnStarted;
}

/** The current turn's start: the first slice to ask in a turn sets it. */
const turnStart = (): number => turnStarted ?? startTurn();

function wake(): void {
  armed = false;
  const next = waiting.shift();
  if (next !== undefined) {
    startTurn();
    next();
  }
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
  constructor(
    private readonly budgetMs = 8,
    private readonly signal?: AbortSignal,
  ) {
    turnStart();
  }

  /** Resolves at once while the turn has time left; else on the slice's next turn. */
  async due(): Promise<void> {
    if (performance.now() - turnStart() < this.budgetMs) return;
    await nextTurn();
    this.signal?.throwIfAborted();
  }
}
