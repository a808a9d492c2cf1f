import type { ChunkPlace } from './ports.js';
import type { DocumentOrigin } from './store/writes.js';

/**
 * Labels a page holds: pages are made as labels arrive and dropped when their last chunk goes. Small, because a
 * page stays for as long as one chunk of it does: a client that writes many documents and deletes all but one of
 * every few leaves a page per chunk that is left (~500 B each at 32 labels; it would be 32 KB at 4,096), while a
 * corpus written in order holds 25 B a chunk with its documents (at 8 chunks a document; measured at 100,000).
 */
const PAGE = 32;
const NONE = -1;
/** A label's page, and its slot in the page (a label may pass 2³², so no bit shifts). */
const pageOf = (label: number) => Math.floor(label / PAGE);
const slotOf = (label: number) => 2 * (label % PAGE);

interface Page {
  /** Per label of the page, its document's number (NONE: no chunk), then its ordinal: [doc, ordinal] pairs. */
  readonly slots: Int32Array;
  placed: number;
}

/** Origins by their code in the table: 'client', the default, is 0. */
const ORIGINS: readonly DocumentOrigin[] = ['client', 'operator'];

/**
 * Where each chunk sits (its document and ordinal), by label, and what the corpus keeps of each document (its metadata
 * and origin): what recall-time filtering and hit assembly ask of every chunk (docs/architecture.md §5). Held as pairs
 * of 32-bit numbers in pages of 32 labels, and each document once, numbered: its id, a count of its chunks, its
 * origin's code and its metadata (when not empty). 8 bytes a chunk where a Map of objects, each holding its own copy
 * of the id read from its row, took ~100. Labels are the store's, never reused and growing with every chunk ever
 * written; a page whose chunks are all gone is dropped, so what is held follows the chunks that are, not the labels
 * ever used. A document goes with its last chunk (a document has a chunk), its number to the next new document.
 */
export class ChunkPlaces {
  readonly #pages = new Map<number, Page>();
  #size = 0;
  /** Document number → id ('' while free), and id → number. */
  readonly #ids: string[] = [];
  readonly #numbers = new Map<string, number>();
  #chunksOf = new Int32Array(64);
  #originOf = new Uint8Array(64);
  /** Each document's text bytes, counted only where a quota in bytes asks for them (else 0), and their sum. */
  #bytesOf = new Float64Array(64);
  #textBytes = 0;
  readonly #metaOf: (Record<string, unknown> | undefined)[] = [];
  readonly #free: number[] = [];

  get size(): number {
    return this.#size;
  }

  /** Documents held. */
  get documents(): number {
    return this.#numbers.size;
  }

  hasDocument(id: string): boolean {
    return this.#numbers.has(id);
  }

  /** Bytes of the texts of the documents held (as counted: see setDocument). */
  get textBytes(): number {
    return this.#textBytes;
  }

  /** Bytes of document `id`'s text; 0 for one not held. */
  bytesOf(id: string): number {
    const doc = this.#numbers.get(id);
    return doc === undefined ? 0 : this.#bytesOf[doc]!;
  }

  set(label: number, docId: string, ordinal: number): void {
    // The document is counted before the label's old place goes: a chunk placed again (a start places the chunks
    // written after the saved indexes twice) must not free its document, metadata and origin with it.
    const doc = this.#number(docId);
    this.#chunksOf[doc]!++;
    this.delete(label);
    const key = pageOf(label);
    let page = this.#pages.get(key);
    if (page === undefined) {
      page = { slots: new Int32Array(2 * PAGE).fill(NONE), placed: 0 };
      this.#pages.set(key, page);
    }
    const at = slotOf(label);
    page.slots[at] = doc;
    page.slots[at + 1] = ordinal;
    page.placed++;
    this.#size++;
  }

  /** Removes the chunk at `label`; whether there was one. */
  delete(label: number): boolean {
    const key = pageOf(label);
    const page = this.#pages.get(key);
    const at = slotOf(label);
    const doc = page?.slots[at] ?? NONE;
    if (page === undefined || doc === NONE) return false;
    page.slots[at] = NONE;
    if (--page.placed === 0) this.#pages.delete(key);
    if (--this.#chunksOf[doc]! === 0) this.#release(doc);
    this.#size--;
    return true;
  }

  get(label: number): ChunkPlace | undefined {
    const page = this.#pages.get(pageOf(label));
    const at = slotOf(label);
    const doc = page?.slots[at] ?? NONE;
    return page === undefined || doc === NONE ? undefined : { docId: this.#ids[doc]!, ordinal: page.slots[at + 1]! };
  }

  /** The id of the document of the chunk at `label`. */
  docOf(label: number): string | undefined {
    const doc = this.#pages.get(pageOf(label))?.slots[slotOf(label)] ?? NONE;
    return doc === NONE ? undefined : this.#ids[doc];
  }

  /**
   * Sets a document's metadata and origin; it is placed with its chunks (set before or after them, as a start reads
   * the documents first and a write places the chunks first).
   */
  setDocument(id: string, meta: Record<string, unknown> | undefined, origin: DocumentOrigin, bytes = 0): void {
    const doc = this.#number(id);
    this.#metaOf[doc] = meta !== undefined && Object.keys(meta).length > 0 ? meta : undefined;
    this.#originOf[doc] = Math.max(0, ORIGINS.indexOf(origin));
    this.#textBytes += bytes - this.#bytesOf[doc]!;
    this.#bytesOf[doc] = bytes;
  }

  /** A document's metadata; {} for one without, or not held. */
  metaOf(id: string): Record<string, unknown> {
    const doc = this.#numbers.get(id);
    return (doc === undefined ? undefined : this.#metaOf[doc]) ?? {};
  }

  /** A document's origin; 'client' for one not held. */
  originOf(id: string): DocumentOrigin {
    const doc = this.#numbers.get(id);
    return ORIGINS[doc === undefined ? 0 : this.#originOf[doc]!]!;
  }

  /** Every placed chunk's label and document id, page by page. */
  *entries(): Generator<[label: number, docId: string]> {
    for (const [key, page] of this.#pages) {
      for (let i = 0; i < PAGE; i++) {
        const doc = page.slots[2 * i]!;
        if (doc !== NONE) yield [key * PAGE + i, this.#ids[doc]!];
      }
    }
  }

  clear(): void {
    this.#pages.clear();
    this.#ids.length = 0;
    this.#numbers.clear();
    this.#chunksOf.fill(0);
    this.#originOf.fill(0);
    this.#bytesOf.fill(0);
    this.#textBytes = 0;
    this.#metaOf.length = 0;
    this.#free.length = 0;
    this.#size = 0;
  }

  #number(docId: string): number {
    const known = this.#numbers.get(docId);
    if (known !== undefined) return known;
    const doc = this.#free.pop() ?? this.#ids.length;
    if (doc === this.#ids.length) this.#ids.push(docId);
    else this.#ids[doc] = docId;
    if (doc >= this.#chunksOf.length) {
      const chunks = new Int32Array(2 * this.#chunksOf.length);
      chunks.set(this.#chunksOf);
      this.#chunksOf = chunks;
      const origins = new Uint8Array(chunks.length);
      origins.set(this.#originOf);
      this.#originOf = origins;
      const bytes = new Float64Array(chunks.length);
      bytes.set(this.#bytesOf);
      this.#bytesOf = bytes;
    }
    this.#numbers.set(docId, doc);
    return doc;
  }

  #release(doc: number): void {
    this.#numbers.delete(this.#ids[doc]!);
    this.#ids[doc] = '';
    this.#metaOf[doc] = undefined;
    this.#originOf[doc] = 0;
    this.#textBytes -= this.#bytesOf[doc]!;
    this.#bytesOf[doc] = 0;
    this.#free.push(doc);
  }
}
