import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DirLock } from '../corpus/index.js';
import { DEFAULT_CORPUS, isCorpusName } from '../protocol/corpus-name.js';
import { StartupError } from '../startup-error.js';

/**
 * The folders of named corpora under `corpora.root` (docs/tenants.md): one folder per corpus, named as the corpus and
 * marked as one by its `corpus.json`. Creating one is making its folder and mark (its store is made when a process
 * first opens it); dropping one takes the mark away, then the folder, and only when no process has the corpus open.
 */

/** The file that makes a folder of the root a corpus: a folder without it is nobody's corpus. */
const MARK = 'corpus.json';

export class CorpusNameError extends StartupError {
  override name = 'CorpusNameError';
}

/** The folder of corpus `name` under `root`; a name that is not one (docs/tenants.md) is refused. */
export function corpusDir(root: string, name: string): string {
  if (!isCorpusName(name)) {
    throw new CorpusNameError(
      `'${name}' is not a corpus name: 1 to 64 of a-z 0-9 - _, starting with a letter or digit`,
    );
  }
  if (name === DEFAULT_CORPUS) throw new CorpusNameError(`'${DEFAULT_CORPUS}' is the process's own corpus (dataDir)`);
  return join(root, name);
}

/** Whether corpus `name` exists under `root` (a folder of that name). */
export function corpusExists(root: string, name: string): boolean {
  if (!isCorpusName(name) || name === DEFAULT_CORPUS) return false;
  try {
    return statSync(join(root, name, MARK)).isFile();
  } catch {
    return false;
  }
}

/** The names of the corpora under `root`, sorted; none when it does not exist. */
export function listCorpora(root: string): string[] {
  let entries;
  try {
    entries = readdirSync(root, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return entries
    .filter((entry) => entry.isDirectory() && corpusExists(root, entry.name))
    .map((entry) => entry.name)
    .sort();
}

/** Makes corpus `name` under `root` (and `root` if need be); a corpus of that name already there is refused. */
export function createCorpus(root: string, name: string): string {
  const dir = corpusDir(root, name);
  mkdirSync(root, { recursive: true });
  if (corpusExists(root, name)) throw new StartupError(`corpus '${name}' already exists`);
  // A folder of that name without the mark (a create cut short) is taken as the corpus.
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, MARK), `${JSON.stringify({ name, created: new Date().toISOString() })}\n`);
  return dir;
}

/**
 * Removes corpus `name` and everything in its folder, when no process has it open (its presence lock, held by every
 * process serving it, is taken alone first): the folder is first renamed out of the way, so that no process can open
 * a half-removed corpus. Returns what was removed: its files and their bytes.
 */
export function dropCorpus(root: string, name: string): { files: number; bytes: number } {
  const dir = corpusDir(root, name);
  if (!corpusExists(root, name)) throw new StartupError(`no corpus '${name}' in ${root}`);
  const lock = DirLock.acquire(dir);
  let gone: string;
  try {
    if (!lock.alone) {
      throw new StartupError(
        `corpus '${name}' is open in a running process; it is closed there after corpora.idleSeconds unused`,
      );
    }
    unlinkSync(join(dir, MARK));
    gone = join(root, `.dropped-${name}-${randomBytes(4).toString('hex')}`);
    renameSync(dir, gone);
  } finally {
    lock.release();
  }
  const removed = sizeOf(gone);
  rmSync(gone, { recursive: true, force: true });
  return removed;
}

/** The files under `dir` and their bytes. */
function sizeOf(dir: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    files += 1;
    bytes += statSync(join(entry.parentPath, entry.name)).size;
  }
  return { files, bytes };
}
