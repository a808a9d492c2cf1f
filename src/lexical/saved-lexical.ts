import { createHash } from 'node:crypto';
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { TimeSlice } from '../protocol/time-slice.js';
import { Bm25Index, type Bm25Options, type Bm25State } from './bm25.js';

/**
 * A saved lexical index (docs/architecture.md §5): the BM25 index's state (bm25.ts `Bm25State`) in one file beside
 * the dense index saved at the same seq, so that a process opens it rather than analysing every chunk's text again.
 *
 *   "RCPBM25\n" · u32 header bytes · header JSON · vocabulary JSON · ends u32[] · docs i32[] · tfs f32[] ·
 *   lengths f64[] · labels f64[] · SHA-256 of all before it
 *
 * Each part starts 8-byte aligned (zero padding), so the arrays are read as views of the file's buffer, uncopied;
 * numbers are little-endian. A file whose digest, seq, store or BM25 settings differ is not loaded: the index is
 * rebuilt from the store, which is the truth.
 */
const MAGIC = Buffer.from('RCPBM25\n');
const VERSION = 1;
const DIGEST_BYTES = 32;
/** Bytes hashed between two looks at the clock. */
const HASH_BLOCK = 1 << 20;

/** What a saved lexical index must have been saved for. */
export interface LexicalIdentity {
  readonly seq: number;
  /** The store's id: a file from another data dir is never loaded. */
  readonly store: string;
  readonly options: Bm25Options;
}

interface Header {
  readonly version: number;
  readonly seq: number;
  readonly store: string;
  readonly options: string;
  readonly ids: number;
  readonly terms: number;
  readonly postings: number;
  readonly vocabularyBytes: number;
}

/** Writes `index` to `file` (flushed), its digest last; writes are kept out by the caller until it returns. */
export async function writeLexical(file: string, index: Bm25Index, identity: LexicalIdentity): Promise<void> {
  const parts = index.parts();
  const vocabulary = Buffer.from(JSON.stringify(parts.vocabulary));
  const header: Header = {
    version: VERSION,
    seq: identity.seq,
    store: identity.store,
    options: optionsKey(identity.options),
    ids: parts.ids,
    terms: parts.vocabulary.length,
    postings: parts.ends.at(-1) ?? 0,
    vocabularyBytes: vocabulary.length,
  };
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(json.length);
  const writer = new BlockWriter(await open(file, 'w'));
  try {
    for (const part of [MAGIC, length, json]) await writer.write(part);
    // Each part after the header starts aligned.
    for (const part of [[vocabulary], [parts.ends], parts.docs, parts.tfs, [parts.lengths], [parts.labels]]) {
      await writer.align();
      for (const piece of part) await writer.write(piece);
    }
    await writer.finish();
  } finally {
    await writer.close();
  }
}

/**
 * Bytes to a file in blocks of HASH_BLOCK, hashed on the way (a time slice between blocks), the digest appended at
 * `finish`: the postings go out as views of the live lists, never gathered into one copy.
 */
class BlockWriter {
  readonly #hash = createHash('sha256');
  readonly #block = Buffer.alloc(HASH_BLOCK);
  readonly #slice = new TimeSlice();
  #filled = 0;
  #offset = 0;

  constructor(private readonly handle: FileHandle) {}

  async write(view: ArrayBufferView): Promise<void> {
    let bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
    while (bytes.length > 0) {
      const taken = Math.min(bytes.length, HASH_BLOCK - this.#filled);
      this.#block.set(bytes.subarray(0, taken), this.#filled);
      this.#filled += taken;
      bytes = bytes.subarray(taken);
      if (this.#filled === HASH_BLOCK) await this.#flush();
    }
  }

  /** Zero bytes up to the next multiple of 8. */
  align(): Promise<void> {
    return this.write(Buffer.alloc(padding(this.#offset + this.#filled)));
  }

  async finish(): Promise<void> {
    await this.#flush();
    const digest = this.#hash.digest();
    await this.handle.write(digest, 0, DIGEST_BYTES, this.#offset);
    await this.handle.sync();
  }

  close(): Promise<void> {
    return this.handle.close();
  }

  async #flush(): Promise<void> {
    const block = this.#block.subarray(0, this.#filled);
    this.#hash.update(block);
    await this.handle.write(block, 0, block.length, this.#offset);
    this.#offset += block.length;
    this.#filled = 0;
    await this.#slice.due();
  }
}

/** The index saved in `file` if it is whole and was saved for `identity`; else why not. */
export async function readLexical(file: string, identity: LexicalIdentity): Promise<Bm25Index | string> {
  const slice = new TimeSlice();
  let bytes: Uint8Array;
  try {
    bytes = aligned(await readFile(file));
  } catch (error) {
    return `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
  }
  const body = bytes.subarray(0, Math.max(0, bytes.length - DIGEST_BYTES));
  if (body.length < MAGIC.length + 4 || !Buffer.from(body.subarray(0, MAGIC.length)).equals(MAGIC))
    return 'not a saved lexical index';
  const digest = createHash('sha256');
  for (let at = 0; at < body.length; at += HASH_BLOCK) {
    digest.update(body.subarray(at, at + HASH_BLOCK));
    await slice.due();
  }
  if (!digest.digest().equals(bytes.subarray(body.length)))
    return `${bytes.length} bytes whose SHA-256 differs (damaged)`;
  const state = parse(body);
  if (typeof state === 'string') return state;
  const { header } = state;
  if (header.seq !== identity.seq || header.store !== identity.store)
    return `saved at seq ${header.seq} of store ${header.store}, not seq ${identity.seq} of ${identity.store}`;
  if (header.options !== optionsKey(identity.options)) return `built with other BM25 settings (${header.options})`;
  return Bm25Index.restore(identity.options, state, slice);
}

/** The state in a file's bytes (digest checked), or why they are not one. */
function parse(body: Uint8Array): (Bm25State & { header: Header }) | string {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const headerBytes = view.getUint32(MAGIC.length, true);
  let offset = MAGIC.length + 4;
  const text = (bytes: number) => Buffer.from(body.subarray(offset, (offset += bytes))).toString('utf8');
  const header = JSON.parse(text(headerBytes)) as Header;
  if (header.version !== VERSION) return `version ${header.version}, not ${VERSION}`;
  const next = <T>(make: (buffer: ArrayBufferLike, at: number, count: number) => T, count: number, size: number) => {
    offset += padding(offset);
    const part = make(body.buffer, body.byteOffset + offset, count);
    offset += count * size;
    return part;
  };
  offset += padding(offset);
  const vocabulary = JSON.parse(text(header.vocabularyBytes)) as string[];
  const ends = next((b, at, n) => new Uint32Array(b, at, n), header.terms, 4);
  const docs = next((b, at, n) => new Int32Array(b, at, n), header.postings, 4);
  const tfs = next((b, at, n) => new Float32Array(b, at, n), header.postings, 4);
  const lengths = next((b, at, n) => new Float64Array(b, at, n), header.ids, 8);
  const labels = next((b, at, n) => new Float64Array(b, at, n), header.ids, 8);
  if (offset !== body.length || vocabulary.length !== header.terms) return 'its parts do not add up to its length';
  return { header, ids: header.ids, vocabulary, ends, docs, tfs, lengths, labels };
}

const padding = (offset: number) => (8 - (offset % 8)) % 8;

/** The file's bytes at an 8-byte aligned address (a typed array view needs its element size's alignment). */
function aligned(buffer: Buffer): Uint8Array {
  if (buffer.byteOffset % 8 === 0) return buffer;
  const copy = new Uint8Array(buffer.length);
  copy.set(buffer);
  return copy;
}

/** The BM25 settings a saved index was built with, as one comparable string (field names sorted). */
function optionsKey({ k1, b, stem, fields }: Bm25Options): string {
  const sorted = Object.fromEntries(Object.entries(fields ?? {}).sort(([x], [y]) => (x < y ? -1 : 1)));
  return JSON.stringify({ k1, b, stem, fields: sorted });
}
