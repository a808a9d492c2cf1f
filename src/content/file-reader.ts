import { constants } from 'node:fs';
import { open, readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RpcError } from '../protocol/errors.js';

type Refuse = (why: string) => RpcError;

/** A path no `file` uri may reach, whatever root contains it, and how a refusal names it. */
export interface ProtectedPath {
  readonly path: string;
  readonly what: string;
}

/**
 * §15.5: kernel and process state (`/proc/self/environ` holds the process's API keys), system settings and devices
 * are never content, even under a root such as `/`.
 */
const SYSTEM_PATHS: readonly ProtectedPath[] = ['/proc', '/sys', '/dev'].map((path) => ({ path, what: path }));

/**
 * `file` Content uris (§4.8) under the §15.5 policy: a file is served only when it lies under one of the configured
 * roots and under no protected path, is a regular file (never a device or a FIFO, which could block the read forever)
 * with a single name (a hard link's other name may be a protected file, or lie outside every root), and is at most
 * `maxBytes`. With no roots, every file uri is refused.
 *
 * Where the file lies is judged on what was actually opened, not only on the path checked beforehand: between a
 * check and an open, a directory on the path can be swapped for a symlink (to /proc/self, say), and `O_NOFOLLOW`
 * guards only the last component. So on Linux the checked real path is opened one component at a time, refusing any
 * symlink that appeared on it, and the path the kernel reports for the open file (`/proc/self/fd/N`) is judged again.
 */
export class FileReader {
  readonly #protected: readonly ProtectedPath[];

  constructor(
    private readonly roots: readonly string[],
    protectedPaths: readonly ProtectedPath[],
    private readonly maxBytes: number,
  ) {
    this.#protected = [...SYSTEM_PATHS, ...protectedPaths].map((entry) => ({ ...entry, path: resolve(entry.path) }));
  }

  async read(url: URL, refuse: Refuse): Promise<Buffer> {
    const path = localPath(url, refuse);
    if (this.roots.length === 0)
      throw refuse('file uris are served only from content.fetch.fileRoots, and none is set');
    // Lexical checks first, so that nothing outside the roots is even looked up (no probing which files exist).
    refuseProtected(path, path, this.#protected, refuse);
    const roots = this.roots.map((root) => resolve(root));
    if (!roots.some((root) => within(path, root))) throw refuse(`'${path}' is outside content.fetch.fileRoots`);
    const real = await realpath(path).catch(() => {
      throw refuse(`'${path}' cannot be read`);
    });
    // A symlink or `..` may lead into a protected tree or out of a root: judge where the path really goes.
    const protectedReal = await realProtected(this.#protected);
    const rootsReal = await realPaths(roots);
    const judge = (where: string) => {
      refuseProtected(where, path, protectedReal, refuse);
      if (!rootsReal.some((root) => within(where, root))) {
        throw refuse(`'${path}' resolves outside content.fetch.fileRoots`);
      }
    };
    judge(real);
    const handle = await openChecked(real, path, refuse);
    try {
      // The path may have changed since it was checked: judge the file that was opened.
      for (const where of await openedPaths(handle, real, path, refuse)) judge(where);
      return await readRegularFile(handle, path, this.maxBytes, refuse);
    } finally {
      await handle.close();
    }
  }
}

/** Refuses `path` when a protected path holds it; the refusal names the path as the client wrote it (`shown`). */
function refuseProtected(path: string, shown: string, paths: readonly ProtectedPath[], refuse: Refuse): void {
  const hit = paths.find((entry) => within(path, entry.path));
  if (hit !== undefined) throw refuse(`'${shown}' is inside ${hit.what}, which is never served`);
}

/** The absolute local path a `file` uri names; another machine's file (`file://host/...`) is not ours to read. */
function localPath(url: URL, refuse: Refuse): string {
  if (url.hostname !== '' && url.hostname !== 'localhost') throw refuse('file uris name a local path');
  try {
    return resolve(fileURLToPath(url));
  } catch {
    throw refuse('not a usable file path');
  }
}

/** Whether `path` is `dir` or lies beneath it (both absolute and normalised). */
export function within(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || !(rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel));
}

/** Real paths of the roots that exist; a missing root holds nothing. */
async function realPaths(paths: readonly string[]): Promise<string[]> {
  const real = await Promise.all(paths.map((path) => realpath(path).catch(() => undefined)));
  return real.filter((path): path is string => path !== undefined);
}

/** Protected paths as written and as really resolved (a data dir reached through a symlink is still the data dir). */
async function realProtected(paths: readonly ProtectedPath[]): Promise<ProtectedPath[]> {
  const real = await Promise.all(
    paths.map(async (entry) => ({ ...entry, path: await realpath(entry.path).catch(() => entry.path) })),
  );
  return [...paths, ...real];
}

/** Linux's `/proc/self/fd`: a path through an open descriptor, and the kernel's name for what it holds. */
const LINUX = process.platform === 'linux';

/**
 * Linux's O_PATH (the asm-generic value, which every architecture Node supports uses): a descriptor that only anchors
 * lookups, so a directory on the way needs search permission, as for any path, and not read permission.
 */
const O_PATH = 0o10000000;

/** Flags of the final open: no final symlink, and no blocking (a FIFO would hold the open until a writer came). */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Opens `real` (a path with no symlinks in it when it was checked) so that no symlink is followed on the way: on
 * Linux one component at a time, each looked up in the directory opened before it (`/proc/self/fd/N/name`, as
 * openat() would) with O_NOFOLLOW, so a directory swapped for a symlink since the check is refused rather than
 * followed. Elsewhere the last component alone is guarded; `openedPaths` then checks the file is the one checked.
 */
async function openChecked(real: string, shown: string, refuse: Refuse): Promise<FileHandle> {
  const refusal = (error: NodeJS.ErrnoException) =>
    refuse(
      error.code === 'ELOOP' || error.code === 'ENOTDIR'
        ? `'${shown}' changed while it was being opened`
        : `'${shown}' cannot be read`,
    );
  const parts = real.split(sep).filter((part) => part !== '');
  const last = parts.pop();
  if (!LINUX || last === undefined) {
    return open(real, READ_FLAGS).catch((error: NodeJS.ErrnoException) => {
      throw refusal(error);
    });
  }
  let dir = await open(sep, O_PATH | constants.O_DIRECTORY).catch((error: NodeJS.ErrnoException) => {
    throw refusal(error);
  });
  try {
    for (const part of parts) {
      const next = await open(`/proc/self/fd/${dir.fd}/${part}`, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      await dir.close();
      dir = next;
    }
    return await open(`/proc/self/fd/${dir.fd}/${last}`, READ_FLAGS);
  } catch (error) {
    throw refusal(error as NodeJS.ErrnoException);
  } finally {
    await dir.close();
  }
}

/**
 * Where the opened file really is. On Linux, the kernel's own name for it (`/proc/self/fd/N`; a file removed since
 * it was opened is reported with ' (deleted)' after its name, so both forms are judged). Elsewhere, `real` once the
 * open file is known to be the file at `real`.
 */
async function openedPaths(handle: FileHandle, real: string, shown: string, refuse: Refuse): Promise<string[]> {
  const changed = () => refuse(`'${shown}' changed while it was being opened`);
  if (!LINUX) {
    const [opened, named] = await Promise.all([handle.stat(), stat(real).catch(() => undefined)]);
    if (named === undefined || opened.dev !== named.dev || opened.ino !== named.ino) throw changed();
    return [real];
  }
  const where = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => {
    throw refuse(`'${shown}' cannot be read`);
  });
  if (!isAbsolute(where)) throw changed();
  const deleted = ' (deleted)';
  return where.endsWith(deleted) ? [where, where.slice(0, -deleted.length)] : [where];
}

/** Reads at most `maxBytes` of an opened regular file that has no other name. */
async function readRegularFile(handle: FileHandle, shown: string, maxBytes: number, refuse: Refuse): Promise<Buffer> {
  const stats = await handle.stat();
  if (!stats.isFile()) throw refuse(`'${shown}' is not a regular file`);
  // A hard link is the same file under another name, which may be the config file, a file in the data dir or one
  // outside every root: the name asked for says nothing about where else the file lies, so none is served.
  if (stats.nlink > 1) {
    throw refuse(`'${shown}' has ${stats.nlink} hard links, and a file with several names is never served`);
  }
  if (stats.size > maxBytes) throw refuse(`content exceeds ${maxBytes} bytes`);
  // The file may grow after stat: read one byte past the limit to notice.
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of handle.createReadStream({ start: 0, end: maxBytes, autoClose: false })) {
    chunks.push(chunk as Buffer);
    length += (chunk as Buffer).length;
  }
  if (length > maxBytes) throw refuse(`content exceeds ${maxBytes} bytes`);
  return Buffer.concat(chunks);
}
