import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';

/**
 * A saved dense index: `dense-<seq>-<token>.hnsw`, its sum beside it as `.sum`. The seq says which write it holds;
 * the token (random per save) keeps two processes that save the same seq from writing over each other's pair. Files
 * from before several processes could share a dir have no token.
 */
const STEM = String.raw`dense-(\d+)(?:-[0-9a-f]+)?`;
export const SAVED_INDEX = new RegExp(String.raw`^${STEM}\.hnsw$`);
/** A saved index's sum. */
export const SAVED_SUM = new RegExp(String.raw`^${STEM}\.sum$`);

/**
 * The file saved with a dense index under its name, `dense-<seq>-<token>.bm25`: the lexical index at the same seq
 * (lexical/saved-lexical.ts), checked by its own digest. Removed with its index; an index without one has its
 * lexical index rebuilt from the store.
 */
export const COMPANION = 'bm25';
export const SAVED_COMPANION = new RegExp(String.raw`^${STEM}\.${COMPANION}$`);
export const companionOf = (file: string) => file.replace(/\.hnsw$/, `.${COMPANION}`);
/** The sum saved beside an index file. */
export const sumOf = (file: string) => file.replace(/\.hnsw$/, '.sum');

/** Any file of a save cut short (its temporary names). */
export const SAVE_CUT_SHORT = new RegExp(String.raw`^${STEM}\.(?:hnsw|sum|${COMPANION})\.tmp$`);

/**
 * What a saved index file must be, kept beside it (`dense-<seq>.sum`): its size and SHA-256, and the settings it
 * was built with. A file that does not match is never handed to hnswlib, whose reader trusts its input (a damaged
 * file can crash the process or silently drop points).
 */
export interface SavedIndexSum {
  /** The store the index was built from (its `storeId`): a file from another data dir is never loaded. */
  readonly store: string;
  readonly seq: number;
  readonly bytes: number;
  readonly sha256: string;
  readonly count: number;
  readonly space: string;
  readonly dimension: number;
  /** The labels the file holds marked deleted (absent from sums saved before they were recorded). */
  readonly deleted?: readonly number[];
}

/** Size and SHA-256 of a file, read in 1 MiB blocks (run in the index's worker thread, never on the event loop). */
export function digestFile(file: string): { bytes: number; sha256: string } {
  const fd = openSync(file, 'r');
  try {
    return digestOpen(fd);
  } finally {
    closeSync(fd);
  }
}

/** Size and SHA-256 of an open file, from its start. */
export function digestOpen(fd: number): { bytes: number; sha256: string } {
  const hash = createHash('sha256');
  const block = Buffer.allocUnsafe(1 << 20);
  let bytes = 0;
  for (let read = readSync(fd, block, 0, block.length, 0); read > 0;) {
    hash.update(block.subarray(0, read));
    bytes += read;
    read = readSync(fd, block, 0, block.length, bytes);
  }
  return { bytes, sha256: hash.digest('hex') };
}

/** How a file differs from what was saved of it, in words that say which: its length, or its content. */
export function damageOf(
  found: { bytes: number; sha256: string },
  expected: { bytes: number; sha256: string } | undefined,
): string | undefined {
  if (expected === undefined) return 'no size and digest saved for it';
  if (found.bytes !== expected.bytes) return `${found.bytes} bytes, not the ${expected.bytes} saved (length differs)`;
  if (found.sha256 !== expected.sha256) return `${found.bytes} bytes as saved, but their SHA-256 differs (damaged)`;
  return undefined;
}
