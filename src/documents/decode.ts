import { isUtf8 } from 'node:buffer';
import { DocumentRefusal } from './parsed.js';

/** The encoding a byte order mark names, if the bytes begin with one. */
export function bomEncoding(bytes: Uint8Array): 'utf-8' | 'utf-16le' | 'utf-16be' | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return undefined;
}

/**
 * Text: UTF-16 when a byte order mark says so, else UTF-8 (its BOM dropped), or a refusal: replacing bad bytes with
 * U+FFFD would store corrupted text.
 */
export function textOf(bytes: Uint8Array): string {
  try {
    return new TextDecoder(bomEncoding(bytes) ?? 'utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new DocumentRefusal('not text (invalid UTF-8)');
  }
}

/** Bytes decoded at a time: a page is handed to the parser in parts, never held whole as a string beside its bytes. */
const PART_BYTES = 1024 * 1024;

/**
 * An HTML file's text, in parts, in the encoding its BOM names, else the one `<meta charset>` (or its `http-equiv`
 * form) declares in its first 1 KB, as browsers look, else UTF-8, else Windows-1252 (what browsers assume of
 * undeclared bytes that are not UTF-8). A page without a BOM that declares UTF-16 is ASCII-compatible bytes, so
 * UTF-8 (as the HTML standard says).
 */
export function* htmlText(bytes: Uint8Array): Generator<string> {
  const decoder = new TextDecoder(htmlEncoding(bytes));
  for (let at = 0; at < bytes.length; at += PART_BYTES) {
    yield decoder.decode(bytes.subarray(at, at + PART_BYTES), { stream: true });
  }
  yield decoder.decode();
}

function htmlEncoding(bytes: Uint8Array): string {
  const bom = bomEncoding(bytes);
  if (bom !== undefined) return bom;
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024)).toString('latin1');
  const declared = /<meta[^>]{0,512}charset\s*=\s*["']?([\w.:-]{1,40})/i.exec(head)?.[1];
  if (declared !== undefined) {
    try {
      const encoding = new TextDecoder(declared).encoding;
      if (!encoding.startsWith('utf-16')) return encoding;
    } catch {
      // An encoding no decoder knows: read it as undeclared.
    }
  }
  return isUtf8(bytes) ? 'utf-8' : 'windows-1252';
}
