/**
 * §7.7.1 the write that added each chunk, for the writes after the snapshot floor (docs/architecture.md §5): kept by
 * label, and by write in the order writes come (seq order), so that the floor and the newest writes are reached
 * without a pass over the rest. The history (history.ts) and the dense index's worker each keep one.
 */
export class WritesBySeq {
  readonly #seqOf = new Map<number, number>();
  readonly #bySeq = new Map<number, number[]>();

  clear(): void {
    this.#seqOf.clear();
    this.#bySeq.clear();
  }

  added(labels: Iterable<number>, seq: number): void {
    const group = this.#bySeq.get(seq) ?? [];
    for (const label of labels) {
      this.#seqOf.set(label, seq);
      group.push(label);
    }
    if (group.length > 0) this.#bySeq.set(seq, group);
  }

  /** The write that added a chunk, when after the floor (else 0: before every version served). */
  seqOf(label: number): number {
    return this.#seqOf.get(label) ?? 0;
  }

  /** The chunks written after `version`, newest writes first. */
  *after(version: number): Generator<number> {
    for (const seq of [...this.#bySeq.keys()].reverse()) {
      if (seq <= version) return;
      yield* this.#bySeq.get(seq)!;
    }
  }

  /** Forgets the writes at or below `floor`. */
  forget(floor: number): void {
    for (const [seq, labels] of this.#bySeq) {
      if (seq > floor) break;
      for (const label of labels) this.#seqOf.delete(label);
      this.#bySeq.delete(seq);
    }
  }
}
