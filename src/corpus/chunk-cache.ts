import { LRUCache } from 'lru-cache';
import type { ChunkBody } from './ports.js';

/**
 * Bytes a cached chunk is counted for: its strings at two bytes a character, the record around them, and its
 * injection screen's (a small record and its list of signals, docs/trust.md).
 */
function bytesOf(chunk: ChunkBody): number {
  const screen = chunk.screen === undefined ? 0 : 64 + 16 * chunk.screen.signals.length;
  return 2 * (chunk.docId.length + chunk.text.length + chunk.context.length) + 96 + screen;
}

/**
 * The chunks hits were last built from, by label, least recently used first out, within `maxBytes`: a retrieve
 * answers its hits' text from memory instead of one store read per hit on the event loop. A chunk larger than the
 * whole budget is not kept.
 */
export class ChunkCache {
  readonly #cache: LRUCache<number, ChunkBody>;

  constructor(maxBytes: number) {
    this.#cache = new LRUCache({ maxSize: maxBytes, sizeCalculation: bytesOf });
  }

  get(label: number): ChunkBody | undefined {
    return this.#cache.get(label);
  }

  /** Keeps `chunk` (when there is one) and returns it. */
  keep(chunk: ChunkBody | undefined): ChunkBody | undefined {
    if (chunk !== undefined && bytesOf(chunk) <= this.#cache.maxSize) this.#cache.set(chunk.label, chunk);
    return chunk;
  }

  delete(label: number): void {
    this.#cache.delete(label);
  }

  /** Bytes held. */
  get bytes(): number {
    return this.#cache.calculatedSize;
  }
}
