import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { isFile, removeFile, syncPath } from '../../platform/files.js';
import { savedIndexFiles } from '../hnsw/dense-index.js';
import { companionOf, damageOf, digestOpen, sumOf, type SavedIndexSum } from '../hnsw/saved-file.js';
import { StoreError } from '../store/dir-lock.js';
import { STORE_FILE } from '../store/scrub.js';
import { copyStore, type StoreFacts } from '../store/store-file.js';
import { writeArchive, type Source } from './archive.js';
import type { BackupManifest } from './manifest.js';
import { outputFile, type OutputKind } from './output.js';

/** A backup's `--to`: replaced only if it is a tar archive (`ustar` at byte 257 of its first header). */
const BACKUP_OUTPUT: OutputKind = {
  name: 'backup',
  isOurs: (bytes) => bytes.length === 512 && bytes.subarray(257, 262).toString('latin1') === 'ustar',
};

export interface BackupReport {
  readonly manifest: BackupManifest;
  /** Saved indexes passed over, each with why (the newest that verifies is taken). */
  readonly passedOver: readonly string[];
}

/**
 * `rcp-server backup` (docs/corpus.md, "Backup and restore"): the data dir `dir` as one archive at `to`, taken while
 * servers read and write it. The store is copied as of one read transaction; the newest saved indexes that the copy
 * can be brought up from (not ahead of it, not older than its pruned removals, of its store, whole) go with it, so a
 * restored corpus starts from them and replays only the writes after them. Written beside `to` (output.ts), then
 * renamed over it.
 */
export async function backupDataDir(dir: string, to: string): Promise<BackupReport> {
  const storeFile = join(dir, STORE_FILE);
  if (!isFile(storeFile)) throw new StoreError(`${dir} holds no corpus (no ${STORE_FILE})`);
  const output = outputFile(dir, to, BACKUP_OUTPUT);
  const work = output.temporary();
  const partial = output.temporary('.tmp');
  mkdirSync(work);
  try {
    const copy = join(work, STORE_FILE);
    const facts = copyStore(storeFile, copy);
    const saved = newestSave(dir, facts);
    try {
      saved.sources.unshift({ name: STORE_FILE, fd: openSync(copy, 'r') });
      const manifest = await writeArchive(partial, saved.sources, {
        format: 'rcp-backup',
        version: 1,
        created: new Date().toISOString(),
        seq: facts.seq,
        indexesSeq: saved.seq,
        store: facts.store,
        ...(facts.upstream === undefined ? {} : { upstream: facts.upstream }),
        ...(facts.encoder === undefined ? {} : { encoder: facts.encoder }),
      });
      syncPath(partial);
      renameSync(partial, output.target);
      syncPath(dirname(output.target));
      return { manifest, passedOver: saved.passedOver };
    } finally {
      for (const { fd } of saved.sources) closeSync(fd);
    }
  } finally {
    removeFile(partial);
    rmSync(work, { recursive: true, force: true });
  }
}

interface Save {
  /** 0 when no saved index qualifies. */
  readonly seq: number;
  readonly sources: Source[];
  readonly passedOver: string[];
}

/**
 * The newest saved index pair the copy of the store can be brought up from, its files open: a server removing a
 * superseded pair meanwhile (docs/architecture.md §5) does not cut the archive short.
 */
function newestSave(dir: string, facts: StoreFacts): Save {
  const passedOver: string[] = [];
  for (const { seq, file } of savedIndexFiles(dir)) {
    if (seq > facts.seq || seq < facts.prunedThrough) continue;
    const sources = openSave(file);
    const reason =
      sources === undefined ? 'it or its sum is missing, or not a plain file' : whyNot(sources, seq, facts);
    if (reason === undefined) return { seq, sources: sources!, passedOver };
    for (const { fd } of sources ?? []) closeSync(fd);
    passedOver.push(`${basename(file)}: ${reason}`);
  }
  return { seq: 0, sources: [], passedOver };
}

/**
 * The index file, its sum and (when there is one) its lexical companion, open; undefined if the pair is gone or one
 * of them is not a plain file. Never through a link, never blocking on a FIFO: a backup carries the dir's own files.
 */
function openSave(file: string): Source[] | undefined {
  const opened: Source[] = [];
  for (const path of [file, sumOf(file), companionOf(file)]) {
    const fd = openPlain(path);
    if (fd !== undefined) {
      opened.push({ name: basename(path), fd });
      continue;
    }
    if (path === companionOf(file)) break; // a save without one: the lexical index is rebuilt at start
    for (const source of opened) closeSync(source.fd);
    return undefined;
  }
  return opened;
}

function openPlain(path: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  if (fstatSync(fd).isFile()) return fd;
  closeSync(fd);
  return undefined;
}

/** Why an opened pair cannot go in the backup: its sum is not of this store and seq, or the file not what it says. */
function whyNot([index, sum]: Source[], seq: number, facts: StoreFacts): string | undefined {
  let saved: SavedIndexSum;
  try {
    saved = JSON.parse(readFileSync(sum!.fd, 'utf8')) as SavedIndexSum;
  } catch {
    return 'its sum is not readable';
  }
  if (saved.store !== facts.store || saved.seq !== seq) return 'its sum is of another store or seq';
  // A length that differs is found without reading the file through; damageOf finds the rest.
  const { size } = fstatSync(index!.fd);
  if (size !== saved.bytes) return `${size} bytes, not the ${saved.bytes} saved`;
  return damageOf(digestOpen(index!.fd), saved);
}
