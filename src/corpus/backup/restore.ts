import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { syncPath } from '../../platform/files.js';
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
 * in; they are moved in with the dir held alone, the store last. A restore refused or cut short leaves `dir` as it was
 * (a kill can leave a `.restore-*` folder in it: servers and later restores pass it by; remove it by hand).
 */
export async function restoreDataDir(file: string, dir: string): Promise<BackupManifest> {
  mkdirSync(dir, { recursive: true });
  refuseUnlessEmpty(dir);
  const staging = mkdtempSync(join(dir, STAGING));
  try {
    const manifest = checked(file, await extractArchive(file, staging));
    const facts = storeFacts(join(staging, STORE_FILE), { check: true });
    if (facts.seq !== manifest.seq || facts.store !== manifest.store) {
      throw new StoreError(`${file}: its store is at seq ${facts.seq}, its manifest says ${manifest.seq}`);
    }
    moveIn(staging, dir, manifest);
    return manifest;
  } finally {
    rmSync(staging, { recursive: true, force: true });
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
    const names = manifest.files.map(({ name }) => name).filter((name) => name !== STORE_FILE);
    for (const name of [...names, STORE_FILE]) renameSync(join(staging, name), join(dir, name));
    syncPath(dir);
  } finally {
    lock.release();
  }
}
