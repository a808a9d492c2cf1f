import { createHash } from 'node:crypto';
import { open, readFile } from 'node:fs/promises';
import { TimeSlice } from '../../protocol/time-slice.js';
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
  const slice = new TimeSlice();
  const state = await index.state(slice);
  const vocabulary = Buffer.from(JSON.stringify(state.vocabulary));
  const header: Header = {
    version: VERSION,
    seq: identity.seq,
    store: identity.store,
    options: optionsKey(identity.options),
    ids: state.ids,
    terms: state.vocabulary.length,
    postings: state.docs.length,
    vocabularyBytes: vocabulary.length,
  };
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(json.length);
  const parts = [MAGIC, length, json, vocabulary, state.ends, state.docs, state.tfs, state.lengths, state.labels];
  const hash = createHash('sha256');
  const handle = await open(file, 'w');
  try {
    let offset = 0;
    for (const [i, part] of parts.entries()) {
      // The header's own parts run on; each part after it starts aligned.
      if (i >= 3) offset = await write(handle, hash, Buffer.alloc(padding(offset)), offset, slice);
      offset = await write(handle, hash, bytesOf(part), offset, slice);
    }
    await handle.write(hash.digest(), 0, DIGEST_BYTES, offset);
    await handle.sync();
  } finally {
    await handle.close();
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

async function write(
  handle: Awaited<ReturnType<typeof open>>,
  hash: ReturnType<typeof createHash>,
  bytes: Uint8Array,
  offset: number,
  slice: TimeSlice,
): Promise<number> {
  for (let at = 0; at < bytes.length; at += HASH_BLOCK) {
    const block = bytes.subarray(at, at + HASH_BLOCK);
    hash.update(block);
    await handle.write(block, 0, block.length, offset + at);
    await slice.due();
  }
  return offset + bytes.length;
}

const padding = (offset: number) => (8 - (offset % 8)) % 8;

const bytesOf = (part: ArrayBufferView) => new Uint8Array(part.buffer, part.byteOffset, part.byteLength);

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
