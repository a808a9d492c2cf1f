import { LRUCache } from 'lru-cache';
import type { ChunkBody } from '../ports.js';
import { screenInSlices, screenText, type Screen } from './screen.js';

/**
 * Screens a hit's body (docs/trust.md): a chunk's stored screen when it has one; else — a row written before screens
 * were stored, or a whole document (`unit: "document"`, §7.7.2) — the body screened now and kept, by label, least
 * recently used first out. A label names one chunk of one version of a document for ever (labels are never reused),
 * so a kept screen never goes stale.
 */
export class ScreenCache {
  readonly #cache = new LRUCache<string, Screen>({ max: SCREENS_KEPT });

  /**
   * `document`: the text of the span the chunk represents, when that is the body: its page (`unit: "page"`) or its
   * whole document (`unit: "document"`). Both contain the chunk and the page lies within the document, so for one
   * label the length tells which (equal lengths: the same text). A body not screened yet is screened here at once:
   * a request screens its bodies in time slices first (`screenBody`).
   */
  of(chunk: ChunkBody, document?: string): Screen {
    return this.#kept(chunk, document) ?? this.#keep(chunk, document, screenText(document ?? chunk.text));
  }

  /** As `of`, screening a body not kept yet in time slices (`due`), so a megabyte body never holds the loop. */
  async body(chunk: ChunkBody, document: string | undefined, due: () => Promise<void>): Promise<Screen> {
    return (
      this.#kept(chunk, document) ?? this.#keep(chunk, document, await screenInSlices(document ?? chunk.text, due))
    );
  }

  /** The chunk's stored screen when the body is the chunk, else the body's kept one. */
  #kept(chunk: ChunkBody, document: string | undefined): Screen | undefined {
    if (document === undefined && chunk.screen !== undefined) return chunk.screen;
    return this.#cache.get(keyOf(chunk, document));
  }

  #keep(chunk: ChunkBody, document: string | undefined, screen: Screen): Screen {
    this.#cache.set(keyOf(chunk, document), screen);
    return screen;
  }
}

const keyOf = (chunk: ChunkBody, document: string | undefined) =>
  document === undefined ? `c${chunk.label}` : `d${chunk.label}:${document.length}`;

/** Screens kept: each is some 100 bytes. */
const SCREENS_KEPT = 8192;
