import { closeSync, fsyncSync, lstatSync, openSync, rmSync } from 'node:fs';

/** Whether `path` is a regular file (not a directory or link an operator left under one of our names). */
export function isFile(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false })?.isFile() === true;
}

/** Removes a file of ours; anything else under its name is left for the operator. */
export function removeFile(path: string): void {
  if (isFile(path)) rmSync(path, { force: true });
}

/** Flushes a file (or a directory's entries) to stable storage: a rename is durable only once its dir is synced. */
export function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
