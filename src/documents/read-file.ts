import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { DocumentRefusal } from './parsed.js';

/**
 * A file's bytes, at most `maxBytes` of them. Its size is checked before anything is read, and the read stops one
 * byte past the bound, so a file too large (or growing) costs nothing; whatever goes wrong (permissions, a file that
 * vanished or is a directory, a FIFO) is a `DocumentRefusal` saying so, never another throw.
 */
export async function readFileBytes(path: string, maxBytes: number): Promise<Buffer> {
  let handle: FileHandle;
  try {
    // Non-blocking: a FIFO named like a document would otherwise hang the run on open.
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw new DocumentRefusal(cannotRead(error));
  }
  try {
    const info = await handle.stat();
    if (info.isDirectory()) throw new DocumentRefusal('is a directory, not a file');
    if (!info.isFile()) throw new DocumentRefusal('not a regular file');
    if (info.size > maxBytes) {
      throw new DocumentRefusal(`${info.size} bytes exceed the ${maxBytes}-byte file limit (not read)`);
    }
    const bytes = await readAtMost(handle, maxBytes + 1);
    if (bytes.length > maxBytes) throw new DocumentRefusal(`grew past the ${maxBytes}-byte file limit while read`);
    return bytes;
  } catch (error) {
    throw error instanceof DocumentRefusal ? error : new DocumentRefusal(cannotRead(error));
  } finally {
    await handle.close();
  }
}

async function readAtMost(handle: FileHandle, limit: number): Promise<Buffer> {
  const buffer = Buffer.alloc(Math.min(limit, 64 * 1024));
  const parts: Buffer[] = [];
  let total = 0;
  while (total < limit) {
    const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, limit - total), null);
    if (bytesRead === 0) break;
    parts.push(Buffer.from(buffer.subarray(0, bytesRead)));
    total += bytesRead;
  }
  return Buffer.concat(parts, total);
}

/** `cannot be read (EACCES: permission denied)`: the system's own words, without the path the caller already names. */
export function cannotRead(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const words = /^[A-Z]+: [^,\n]+/.exec(message)?.[0] ?? message.split('\n', 1)[0] ?? '';
  return `cannot be read (${words})`;
}
