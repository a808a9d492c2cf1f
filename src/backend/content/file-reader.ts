import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RpcError } from '../../protocol/errors.js';

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
 * `file` Content uris (§4.8) under the §15.5 policy: a file is served only when its real path (symlinks and `..`
 * resolved) lies under one of the configured roots and under no protected path, is a regular file (never a device or
 * a FIFO, which could block the read forever) and is at most `maxBytes`. With no roots, every file uri is refused.
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

  async read(url: URL, refuse: Refuse): Promise<string> {
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
    refuseProtected(real, path, await realProtected(this.#protected), refuse);
    if (!(await realPaths(roots)).some((root) => within(real, root))) {
      throw refuse(`'${path}' resolves outside content.fetch.fileRoots`);
    }
    return readRegularFile(real, path, this.maxBytes, refuse);
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
function within(path: string, dir: string): boolean {
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

/**
 * Reads at most `maxBytes` of a regular file. Opened without following a final symlink (one swapped in after the
 * check is refused) and without blocking (a FIFO would otherwise hold the open until a writer came).
 */
async function readRegularFile(real: string, shown: string, maxBytes: number, refuse: Refuse): Promise<string> {
  const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  const handle = await open(real, flags).catch(() => {
    throw refuse(`'${shown}' cannot be read`);
  });
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw refuse(`'${shown}' is not a regular file`);
    if (stats.size > maxBytes) throw refuse(`content exceeds ${maxBytes} bytes`);
    // The file may grow after stat: read one byte past the limit to notice.
    const chunks: Buffer[] = [];
    let length = 0;
    for await (const chunk of handle.createReadStream({ start: 0, end: maxBytes, autoClose: false })) {
      chunks.push(chunk as Buffer);
      length += (chunk as Buffer).length;
    }
    if (length > maxBytes) throw refuse(`content exceeds ${maxBytes} bytes`);
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    await handle.close();
  }
}
