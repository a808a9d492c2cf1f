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

/**
 * An HTML file's text in the encoding it declares (a BOM, else `<meta charset>` or its `http-equiv` form in the first
 * 1 KB, as browsers look), else UTF-8, else Windows-1252 (what browsers assume of undeclared bytes that are not
 * UTF-8).
 */
export function htmlText(bytes: Uint8Array): string {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024)).toString('latin1');
  const declared = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1];
  if (declared !== undefined && !/^utf-?8$/i.test(declared)) {
    try {
      return new TextDecoder(declared).decode(bytes);
    } catch {
      // An encoding no decoder knows: read it as undeclared.
    }
  }
  try {
    return UTF8.decode(bytes);
  } catch {
    return new TextDecoder('windows-1252').decode(bytes);
  }
}
