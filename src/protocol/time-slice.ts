/**
 * Cooperative time slicing for CPU-bound loops on the event loop (docs/architecture.md §9): `await slice.due()` inside
 * the loop gives the loop back once the current turn has run sliced work for `budgetMs`, and throws the signal's reason
 * if the request was cancelled or timed out meanwhile.
 *
 * The budget is the turn's, not the slice's: one turn of the event loop runs at most `budgetMs` of sliced work,
 * however many slices it passes through (a retrieve goes from lexical completion to dense completion to packing,
 * each with its own slice: counted apart, one turn ran three budgets, 26 ms). Waiting slices take turns across every
 * request in the process: each turn of the event loop wakes them oldest first, one after another until its budget is
 * spent, and the loop then serves timers and I/O (other clients, `ping`) before the next. A hundred heavy requests at
 * once slow one another down, not the loop.
 */
const waiting: { slice: TimeSlice; resume: () => void }[] = [];
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
      woken.clear();
    }, 0).unref();
  }
  return turnStarted;
}

/** The current turn's start: the first slice to ask in a turn sets it. */
const turnStart = (): number => turnStarted ?? startTurn();

/** The slices woken this turn: each runs on while the turn lasts; fresh work waits behind the queue. */
const woken = new Set<TimeSlice>();

/**
 * Wakes waiting slices, oldest first, one after another while the turn's budget lasts: each runs until it yields again,
 * finishes or waits for I/O (its chain of promises drained) before the next is woken. One slice a turn starved them
 * when the turn was busy with I/O: a hundred cheap refusals a turn left each slice one step every few milliseconds.
 */
function wake(): void {
  armed = false;
  startTurn();
  woken.clear();
  wakeNext();
}

function wakeNext(): void {
  const next = waiting[0];
  if (next === undefined || (woken.size > 0 && performance.now() - turnStart() >= next.slice.budgetMs)) return arm();
  waiting.shift();
  woken.add(next.slice);
  next.resume();
  // A tick queued from a microtask runs once every microtask has: once the slice just woken has run as far as it can.
  queueMicrotask(() => process.nextTick(wakeNext));
}

function arm(): void {
  if (armed || waiting.length === 0) return;
  armed = true;
  setImmediate(wake);
}

/** Resolves on a later turn of the event loop, when this slice's turn comes. */
function nextTurn(slice: TimeSlice): Promise<void> {
  return new Promise((resume) => {
    waiting.push({ slice, resume });
    arm();
  });
}

/** How long one turn of the event loop may run sliced work before it serves timers and I/O again. */
export const TURN_BUDGET_MS = 8;

export class TimeSlice {
  constructor(
    private readonly signal?: AbortSignal,
    readonly budgetMs = TURN_BUDGET_MS,
  ) {
    turnStart();
  }

  /**
   * Whether `due` would give the loop back now. A loop whose steps are cheap asks this at every step and awaits `due`
   * only when it holds: the check is a clock read, an await is a turn of the microtask queue.
   */
  spent(): boolean {
    return performance.now() - turnStart() >= this.budgetMs || (waiting.length > 0 && !woken.has(this));
  }

  /**
   * Resolves at once while the turn has time left and no other slice waits for one (or this one was woken for this
   * turn); else on the slice's next turn. Work that arrives while others wait goes behind them: before, a request
   * arriving fresh ran ahead of every waiting one, turn after turn, and under load a few waited seconds while most
   * took a millisecond.
   */
  async due(): Promise<void> {
    if (!this.spent()) return;
    await nextTurn(this);
    this.signal?.throwIfAborted();
  }
}
