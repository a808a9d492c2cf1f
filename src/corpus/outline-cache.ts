import { LRUCache } from 'lru-cache';
import { outlineOf, type Outline } from './outline.js';

/** Outlines kept for building hits, in bytes (an outline is small: its heading titles and a few offsets). */
const OUTLINE_CACHE_BYTES = 8 * 1024 * 1024;

function bytesOf(entry: { hash: string; outline: Outline }): number {
  const titles = entry.outline.headings.reduce((sum, heading) => sum + 2 * heading.title.length + 48, 0);
  return titles + 8 * entry.outline.breaks.length + 2 * entry.hash.length + 96;
}

/**
 * The outlines (outline.ts) of the documents hits were last built from, by document id and checked against the
 * document's content hash, so a document written since is read again: a hit's heading path and page cost one read
 * of its document once, not one per hit. An outline larger than the whole budget is kept as the last one read only.
 */
export class OutlineCache {
  readonly #cache = new LRUCache<string, { hash: string; outline: Outline }>({
    maxSize: OUTLINE_CACHE_BYTES,
    sizeCalculation: bytesOf,
  });

  /** The last outline read, whatever its size: the hits of one answer often come from one document. */
  #last: { id: string; hash: string; outline: Outline } | undefined;

  get(id: string, hash: string | undefined, text: () => string | undefined): Outline | undefined {
    const kept = this.#last?.id === id ? this.#last : this.#cache.get(id);
    if (kept !== undefined && kept.hash === hash) return kept.outline;
    const read = text();
    if (read === undefined || hash === undefined) return undefined;
    const outline = outlineOf(read);
    this.#last = { id, hash, outline };
    this.#cache.set(id, this.#last);
    return outline;
  }
}
