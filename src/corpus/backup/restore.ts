import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { syncPath } from '../../platform/files.js';
import { SAVED_INDEX } from '../hnsw/saved-file.js';
import { DirLock, LOCK_FILE, StoreError } from '../store/dir-lock.js';
import { STORE_FILE } from '../store/scrub.js';
import { storeFacts } from '../store/store-file.js';
import { extractArchive, type Extracted } from './archive.js';
import { MANIFEST, parseManifest, type BackupManifest } from './manifest.js';

/** Where a restore writes before its files are moved in: inside the dir, so the moves are renames on one filesystem. */
const STAGING = '.restore-';

/**
 * `rcp-server restore` (docs/corpus.md, "Backup and restore"): the backup at `file` into `dir`, which must hold no
 * corpus. Every file is checked against the manifest and the store against itself (`quick_check`) before any is moved
 * in; they are moved in with the dir held alone, the store first. A restore refused leaves `dir` as it was; one killed
 * can leave a `.restore-*` folder in it (servers and later restores pass it by; remove it by hand), and one killed
 * between the moves a store without some of its saved indexes, which a server builds at its start.
 */
export async function restoreDataDir(file: string, dir: string): Promise<BackupManifest> {
  if (statSync(file, { throwIfNoEntry: false })?.isFile() !== true) throw new StoreError(`${file} is not a file`);
  const created = mkdirSync(dir, { recursive: true });
  refuseUnlessEmpty(dir);
  const staging = mkdtempSync(join(dir, STAGING));
  let restored = false;
  try {
    const manifest = checked(file, await extractArchive(file, staging));
    checkStore(file, staging, manifest);
    moveIn(staging, dir, manifest);
    restored = true;
    return manifest;
  } finally {
    rmSync(staging, { recursive: true, force: true });
    // A dir this restore made and left empty goes too: a refused restore writes nothing.
    if (!restored && created !== undefined) removeMade(resolve(dir), resolve(created));
  }
}

/** The store as the manifest names it: whole, an rcp-server store, at its seq, of its identity, encoder and upstream. */
function checkStore(file: string, staging: string, manifest: BackupManifest): void {
  const facts = storeFacts(join(staging, STORE_FILE), { check: true });
  const differs = (['seq', 'store', 'encoder', 'upstream'] as const).find((key) => facts[key] !== manifest[key]);
  if (differs !== undefined) {
    const said = (value: string | number | undefined) => (value === undefined ? 'none' : String(value));
    throw new StoreError(
      `${file}: its store's ${differs} is ${said(facts[differs])}, its manifest says ${said(manifest[differs])}`,
    );
  }
}

/** The empty folders from `dir` up to `created`, the first that mkdir made; none that holds anything. */
function removeMade(dir: string, created: string): void {
  for (let folder = dir; folder.startsWith(created); folder = dirname(folder)) {
    try {
      rmdirSync(folder);
    } catch {
      return; // not empty: someone else's now
    }
  }
}

/** The manifest, once every file the archive held is one it names, of the size and SHA-256 it names. */
function checked(file: string, { files, manifest }: Extracted): BackupManifest {
  if (manifest === undefined) throw new StoreError(`${file} holds no ${MANIFEST}: it is not a whole backup`);
  let parsed: BackupManifest;
  try {
    parsed = parseManifest(manifest);
  } catch (error) {
    throw new StoreError(`${file}: ${(error as Error).message}`);
  }
  const named = new Map(parsed.files.map((entry) => [entry.name, entry]));
  if (!named.has(STORE_FILE)) throw new StoreError(`${file}: its manifest names no ${STORE_FILE}`);
  for (const [name, expected] of named) {
    const found = files.get(name);
    if (found === undefined) throw new StoreError(`${file} lacks ${name}, which its manifest names`);
    if (found.bytes !== expected.bytes || found.sha256 !== expected.sha256) {
      throw new StoreError(`${file}: ${name} is not what its manifest says (${found.bytes} bytes, damaged)`);
    }
  }
  const extra = [...files.keys()].find((name) => !named.has(name));
  if (extra !== undefined) throw new StoreError(`${file} holds ${extra}, which its manifest does not name`);
  const indexes = [...named.keys()].map((name) => SAVED_INDEX.exec(name)).filter((match) => match !== null);
  const seqs = indexes.map((match) => Number(match[1]));
  if (seqs.length > 1 || (seqs[0] ?? 0) !== parsed.indexesSeq) {
    throw new StoreError(
      `${file}: its saved indexes are at ${seqs.join(', ') || 'none'}, its manifest says ${parsed.indexesSeq}`,
    );
  }
  return parsed;
}

/** A corpus, or anything else of someone's, is never written over: only the lock and restores' staging may be there. */
function refuseUnlessEmpty(dir: string): void {
  const found = readdirSync(dir).find((name) => name !== LOCK_FILE && !name.startsWith(STAGING));
  if (found !== undefined) throw new StoreError(`${dir} is not empty (it holds ${found}): restore into an empty dir`);
}

/** Moves the checked files in with the dir held alone: no process may start on it half restored. */
function moveIn(staging: string, dir: string, manifest: BackupManifest): void {
  const lock = DirLock.acquire(dir);
  try {
    if (!lock.alone) throw new StoreError(`a process serves ${dir}: stop it, or restore into another dir`);
    refuseUnlessEmpty(dir);
    // The store first: a restore cut short between the moves leaves a corpus whose indexes are built at its start.
    const names = manifest.files.map(({ name }) => name).filter((name) => name !== STORE_FILE);
    for (const name of [STORE_FILE, ...names]) renameSync(join(staging, name), join(dir, name));
    syncPath(dir);
  } finally {
    lock.release();
  }
}
