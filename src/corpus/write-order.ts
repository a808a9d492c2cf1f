import type { Logger } from '../protocol/logger.js';
import type { DerivedIndexes } from './indexes.js';
import type { CorpusStore, WriteResult } from './store/corpus-store.js';

/** How long indexes replaced by a reload stay open for the searches that were using them. */
const RETIRED_MS = 30_000;

/** How often, by default, other processes' writes to the data dir are looked for (`index.followMs`). */
const FOLLOW_MS = 50;

/**
 * The order in which writes reach the derived indexes (docs/architecture.md §5): this process's own, as it commits
 * them, and every other process's serving the data dir, read back from the store — one queue, in sequence order. It
 * holds the indexes the corpus serves from, and swaps them for fresh ones when this process fell behind the
 * removals the store keeps.
 */
export class WriteOrder {
  #indexes: DerivedIndexes;
  #writes: Promise<unknown> = Promise.resolve();
  #follower: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: CorpusStore,
    private readonly derive: () => DerivedIndexes,
    private readonly log: Logger,
  ) {
    this.#indexes = derive();
  }

  /** The indexes searches read now (a reload replaces them; a search under way keeps the ones it started on). */
  get indexes(): DerivedIndexes {
    return this.#indexes;
  }

  /** Runs `write` after every earlier write: commits and index updates happen in sequence order. */
  serialized<T>(write: () => Promise<T>): Promise<T> {
    const next = this.#writes.then(write, write);
    this.#writes = next.catch(() => undefined);
    return next;
  }

  /** After every earlier write: applies the store's writes through `through` (its head unless said), in order. */
  caughtUp(through?: number): Promise<void> {
    return this.serialized(() => this.#follow(through));
  }

  /**
   * This process's committed write, applied: at once if it is the next, else with the writes before it read back
   * from the store. (A write that changed nothing took no seq of its own: the store's head is where it stands.)
   * Called inside `serialized`.
   */
  async applyOwn(write: WriteResult): Promise<void> {
    const changed = write.repeated === undefined && write.written.length + write.deletedIds.length > 0;
    if (changed && write.seq === this.#indexes.appliedSeq + 1) await this.#indexes.apply(write);
    else await this.#follow(write.seq);
  }

  /**
   * Every `everyMs`, applies what other processes serving the data dir committed, in order with this process's own
   * writes: a look at the store's data version, microseconds when nothing changed.
   */
  followOthers(everyMs = FOLLOW_MS): void {
    this.#follower = setInterval(() => {
      try {
        if (this.store.changed()) void this.caughtUp().catch((error: unknown) => this.#followFailed(error));
      } catch (error) {
        this.#followFailed(error);
      }
    }, everyMs);
    this.#follower.unref();
  }

  /** Stops following; the writes queued finish, then the indexes close. */
  async close(): Promise<void> {
    clearInterval(this.#follower);
    await this.#writes;
    await this.#indexes.close();
  }

  async #follow(through = this.store.seq): Promise<void> {
    const from = this.#indexes.appliedSeq;
    if (through <= from) return;
    if (this.store.prunedThrough <= from) {
      await this.#indexes.follow(through);
      // A save in another process may have pruned removals this follow was still to read: then it reloads.
      if (this.store.prunedThrough <= from) return;
    }
    await this.#reload();
  }

  /**
   * This process fell further behind the store than the removals it keeps (pruned at a save, one save interval
   * behind): its indexes are loaded again, as at start. Searches under way finish on the old ones, closed after.
   */
  async #reload(): Promise<void> {
    const old = this.#indexes;
    this.log.warn(
      { applied: old.appliedSeq, prunedThrough: this.store.prunedThrough },
      'corpus: behind the removals the store keeps; loading its indexes again',
    );
    const fresh = this.derive();
    await fresh.load();
    this.#indexes = fresh;
    setTimeout(() => void old.close(), RETIRED_MS).unref();
  }

  /** A follow that failed is logged, and tried again at the next change. */
  #followFailed(error: unknown): void {
    this.log.error({ reason: (error as Error).message }, 'corpus: could not apply the writes of other processes');
  }
}
