import { randomBytes } from 'node:crypto';
import { closeSync, lstatSync, openSync, readdirSync, readSync, realpathSync, rmSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { StoreError } from '../store/dir-lock.js';

/** What a command writes, and how a file it wrote begins (an existing `--to` is replaced only if it is one). */
export interface OutputKind {
  readonly name: 'backup' | 'export';
  readonly isOurs: (head: Buffer) => boolean;
}

/** Where a backup or an export goes: the file, and the temporary names beside it that this process owns. */
export interface Output {
  readonly target: string;
  /** A temporary name beside the target (`.rcp-<kind>-<pid>-<random><suffix>`). */
  temporary(suffix?: string): string;
}

/**
 * The file `to` for a command that reads the data dir `dir`, checked before anything is written: its folder exists
 * and is not inside the data dir (where it could replace the store or its lock); `to` is no folder or link, and an
 * existing file is replaced only if it is what this command writes. Temporary names are short, so any name `to` may
 * have fits beside them, and name their process: those of a process that is gone (killed before it could remove
 * them) are removed here.
 */
export function outputFile(dir: string, to: string, kind: OutputKind): Output {
  const target = resolve(to);
  const folder = dirname(target);
  if (statSync(folder, { throwIfNoEntry: false })?.isDirectory() !== true) {
    throw new StoreError(`${to}: its folder ${folder} does not exist`);
  }
  const inside = relative(realpathSync(dir), realpathSync(folder));
  if (!inside.startsWith('..') && !isAbsolute(inside)) {
    throw new StoreError(`${to} is inside the data dir ${dir}: write the ${kind.name} elsewhere`);
  }
  const existing = lstatSync(target, { throwIfNoEntry: false });
  if (existing !== undefined && (!existing.isFile() || !kind.isOurs(head(target)))) {
    throw new StoreError(`${to} exists and is not an rcp-server ${kind.name}: nothing was written over it`);
  }
  removeAbandoned(folder, kind.name);
  const prefix = `.rcp-${kind.name}-${process.pid}-${randomBytes(4).toString('hex')}`;
  return { target, temporary: (suffix = '') => join(folder, `${prefix}${suffix}`) };
}

/** The first 512 bytes of a file (a tar header's length). */
function head(file: string): Buffer {
  const bytes = Buffer.alloc(512);
  const fd = openSync(file, 'r');
  try {
    return bytes.subarray(0, readSync(fd, bytes, 0, bytes.length, 0));
  } finally {
    closeSync(fd);
  }
}

/** Temporary files and folders of this kind whose process is gone. */
function removeAbandoned(folder: string, kind: string): void {
  const pattern = new RegExp(`^\\.rcp-${kind}-(\\d+)-[0-9a-f]{8}`);
  for (const name of readdirSync(folder)) {
    const pid = Number(pattern.exec(name)?.[1]);
    if (Number.isInteger(pid) && !alive(pid)) rmSync(join(folder, name), { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
