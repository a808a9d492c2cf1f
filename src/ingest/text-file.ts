import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/** A file's text, or a one-line reason it is not a document (the caller names the file). */
export type TextRead = { readonly text: string } | { readonly reason: string };

/** Bytes sniffed for a NUL, as git and grep do: text never holds one, nearly every binary format does early on. */
const SNIFF_BYTES = 8 * 1024;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads a text file of at most `maxBytes` bytes. Its size is checked before anything is read, and the read stops one
 * byte past the bound, so a file too large (or growing) costs nothing; whatever goes wrong — permissions, a file that
 * vanished or is a directory, binary or non-UTF-8 content — comes back as a reason, never as a throw.
 */
export async function readTextFile(path: string, maxBytes: number): Promise<TextRead> {
  let handle: FileHandle;
  try {
    // Non-blocking: a FIFO named like a text file would otherwise hang the run on open.
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    return { reason: cannotRead(error) };
  }
  try {
    const refused = await refuseUnread(handle, maxBytes);
    if (refused !== undefined) return { reason: refused };
    const bytes = await readAtMost(handle, maxBytes + 1);
    if (bytes.length > maxBytes) return { reason: `grew past the ${maxBytes}-byte document limit while read` };
    return decodeText(bytes);
  } catch (error) {
    return { reason: cannotRead(error) };
  } finally {
    await handle.close();
  }
}

/** Why the file is not read at all, by what fstat says: not a regular file, or larger than a document may be. */
async function refuseUnread(handle: FileHandle, maxBytes: number): Promise<string | undefined> {
  const info = await handle.stat();
  if (info.isDirectory()) return 'is a directory, not a file';
  if (!info.isFile()) return 'not a regular file';
  return info.size > maxBytes ? `${info.size} bytes exceed the ${maxBytes}-byte document limit (not read)` : undefined;
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

/** The text of bytes that are text: no NUL in the first 8 KB, and valid UTF-8 (a leading BOM is dropped). */
export function decodeText(bytes: Buffer): TextRead {
  if (looksBinary(bytes)) return { reason: 'binary, not text (a NUL byte in its first 8 KB)' };
  const text = utf8(bytes);
  return text === undefined ? { reason: NOT_UTF8 } : { text };
}

export const NOT_UTF8 = 'not text (invalid UTF-8)';

/** The bytes as UTF-8, or undefined if they are not: replacing bad bytes with U+FFFD would store corrupted text. */
export function utf8(bytes: Buffer): string | undefined {
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

export function looksBinary(bytes: Buffer): boolean {
  return bytes.subarray(0, SNIFF_BYTES).includes(0);
}

/** `cannot be read (EACCES: permission denied)`: the system's own words, without the path the caller already names. */
export function cannotRead(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const words = /^[A-Z]+: [^,\n]+/.exec(message)?.[0] ?? message.split('\n', 1)[0] ?? '';
  return `cannot be read (${words})`;
}
