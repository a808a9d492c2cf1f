import { randomBytes, randomUUID } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
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

/** What the folders refuse (each a StartupError: the CLI's exit 2; the admin methods map each to its wire error). */
export class CorpusNameError extends StartupError {
  override name = 'CorpusNameError';
}

export class CorpusExists extends StartupError {
  override name = 'CorpusExists';
}

export class NoSuchCorpus extends StartupError {
  override name = 'NoSuchCorpus';
}

export class CorpusOpenElsewhere extends StartupError {
  override name = 'CorpusOpenElsewhere';
}

/** A root of named corpora that exists as something else than a folder is refused at start. */
export function checkRoot(root: string): void {
  let isFolder: boolean;
  try {
    isFolder = statSync(root).isDirectory();
  } catch {
    return; // made by the first `corpus create`
  }
  if (!isFolder) throw new StartupError(`corpora.root ${root} is not a folder`);
}

/** Refuses a name that is not one of a named corpus (docs/tenants.md). */
export function checkName(name: string): void {
  if (!isCorpusName(name)) {
    throw new CorpusNameError(
      `'${name}' is not a corpus name: 1 to 64 of a-z 0-9 - _, starting with a letter or digit`,
    );
  }
  if (name === DEFAULT_CORPUS) throw new CorpusNameError(`'${DEFAULT_CORPUS}' is the process's own corpus (dataDir)`);
}

/** The folder of corpus `name` under `root`; a name that is not one (docs/tenants.md) is refused. */
export function corpusDir(root: string, name: string): string {
  checkName(name);
  return join(root, name);
}

/**
 * Whether corpus `name` exists under `root`: a folder of that name (not a link to one elsewhere, which the protections
 * of the root would not cover) holding its mark.
 */
export function corpusExists(root: string, name: string): boolean {
  if (!isCorpusName(name) || name === DEFAULT_CORPUS) return false;
  try {
    return lstatSync(join(root, name)).isDirectory() && statSync(join(root, name, MARK)).isFile();
  } catch {
    return false;
  }
}

/**
 * The identity of corpus `name`, written in its mark when it was created: a corpus dropped and created again under
 * the same name is another corpus (its cursors are not the old one's). Empty when the mark holds none.
 */
export function corpusIdentity(root: string, name: string): string {
  try {
    const mark = JSON.parse(readFileSync(join(root, name, MARK), 'utf8')) as { id?: unknown };
    return typeof mark.id === 'string' ? mark.id : '';
  } catch {
    return '';
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * The names of the corpora under `root`, sorted; none when it does not exist. Read without blocking the event loop
 * (a root may hold thousands).
 */
export async function listCorpora(root: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(root, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const marked = async (name: string) => (await stat(join(root, name, MARK)).catch(() => undefined))?.isFile();
  const names = entries.filter((entry) => entry.isDirectory() && isCorpusName(entry.name)).map((entry) => entry.name);
  const flags = await Promise.all(names.map(marked));
  return names.filter((name, i) => name !== DEFAULT_CORPUS && flags[i] === true).sort();
}

/** Makes corpus `name` under `root` (and `root` if need be); a corpus of that name already there is refused. */
export function createCorpus(root: string, name: string): string {
  const dir = corpusDir(root, name);
  mkdirSync(root, { recursive: true });
  if (corpusExists(root, name)) throw new CorpusExists(`corpus '${name}' already exists`);
  // A folder of that name without the mark (a create cut short) is taken as the corpus; a link is not followed.
  if (isLink(dir)) throw new CorpusExists(`'${name}' in the root is a link, not a corpus`);
  mkdirSync(dir, { recursive: true });
  const mark = { name, id: randomUUID(), created: new Date().toISOString() };
  try {
    // Made once: of two creates at once, one is told the corpus exists.
    writeFileSync(join(dir, MARK), `${JSON.stringify(mark)}\n`, { flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new CorpusExists(`corpus '${name}' already exists`);
    throw error;
  }
  return dir;
}

/**
 * Removes corpus `name` and everything in its folder, when no process has it open (its presence lock, held by every
 * process serving it, is taken alone first): the folder is first renamed out of the way, so that no process can open
 * a half-removed corpus. Returns what was removed: its files and their bytes.
 */
export function dropCorpus(root: string, name: string): { files: number; bytes: number } {
  const dir = corpusDir(root, name);
  if (!corpusExists(root, name)) throw new NoSuchCorpus(`no corpus '${name}' in ${root}`);
  const lock = DirLock.acquire(dir);
  let gone: string;
  try {
    if (!lock.alone) {
      throw new CorpusOpenElsewhere(
        `corpus '${name}' is open in another process (a server closes it after corpora.idleSeconds unused; ` +
          'a stdio or MCP process holds it while it runs)',
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
