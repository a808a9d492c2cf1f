import { isUtf8 } from 'node:buffer';
import { DocumentRefusal } from './parsed.js';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** UTF-8 text (a BOM dropped), or a refusal: replacing bad bytes with U+FFFD would store corrupted text. */
export function utf8Text(bytes: Uint8Array): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new DocumentRefusal('not text (invalid UTF-8)');
  }
}

/** Bytes decoded at a time: a page is handed to the parser in parts, never held whole as a string beside its bytes. */
const PART_BYTES = 1024 * 1024;

/**
 * An HTML file's text, in parts, in the encoding it declares (a BOM, else `<meta charset>` or its `http-equiv` form in
 * the first 1 KB, as browsers look), else UTF-8, else Windows-1252 (what browsers assume of undeclared bytes that are
 * not UTF-8).
 */
export function* htmlText(bytes: Uint8Array): Generator<string> {
  const decoder = new TextDecoder(htmlEncoding(bytes));
  for (let at = 0; at < bytes.length; at += PART_BYTES) {
    yield decoder.decode(bytes.subarray(at, at + PART_BYTES), { stream: true });
  }
  yield decoder.decode();
}

function htmlEncoding(bytes: Uint8Array): string {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024)).toString('latin1');
  const declared = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1];
  if (declared !== undefined) {
    try {
      return new TextDecoder(declared).encoding;
    } catch {
      // An encoding no decoder knows: read it as undeclared.
    }
  }
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return isUtf8(bytes) ? 'utf-8' : 'windows-1252';
}
