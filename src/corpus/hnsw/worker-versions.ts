import { WritesBySeq } from '../snapshots/writes-by-seq.js';

/**
 * §7.7.1 the worker's memory of recent versions (docs/architecture.md §5): when each label came and went after the
 * floor, and the vector of each label that went, exactly as hnswlib held it, so that an exact search at an earlier
 * version scores every vector it held with the same numbers it had then.
 */
export class WorkerVersions {
  readonly #written = new WritesBySeq();
  readonly #removedAt = new Map<number, number>();
  readonly #retained = new Map<number, Float32Array>();

  clear(): void {
    this.#written.clear();
    this.#removedAt.clear();
    this.#retained.clear();
  }

  added(labels: Iterable<number>, seq: number): void {
    this.#written.added(labels, seq);
  }

  /** The labels write `seq` removes (they stay in the graph until `retain`). */
  removing(labels: Iterable<number>, seq: number): void {
    for (const label of labels) this.#removedAt.set(label, seq);
  }

  /** Whether a label on its way out of the graph is kept for the versions before its removal. */
  wanted(label: number): boolean {
    return this.#removedAt.has(label);
  }

  retain(label: number, vector: ArrayLike<number>): void {
    this.#retained.set(label, Float32Array.from(vector));
  }

  /** A removed label's vector, or undefined. */
  vectorOf(label: number): Float32Array | undefined {
    return this.#retained.get(label);
  }

  /** Whether `label` belonged to `version`, given whether the graph still holds it live. */
  holds(label: number, version: number, live: boolean): boolean {
    if (this.#written.seqOf(label) > version) return false;
    const removed = this.#removedAt.get(label);
    if (removed === undefined) return live;
    return removed > version && (live || this.#retained.has(label));
  }

  /** The removed labels kept that belonged to `version`. */
  *retainedIn(version: number): Generator<number> {
    for (const label of this.#retained.keys()) if (this.holds(label, version, false)) yield label;
  }

  get retainedCount(): number {
    return this.#retained.size;
  }

  /** Forgets what no version from `floor` on needs. */
  forget(floor: number): void {
    this.#written.forget(floor);
    for (const [label, seq] of this.#removedAt) {
      if (seq > floor) continue;
      this.#removedAt.delete(label);
      this.#retained.delete(label);
    }
  }
}
