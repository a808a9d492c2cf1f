/** Bytes sniffed for a NUL, as git and grep do: text never holds one, nearly every binary format does early on. */
const SNIFF_BYTES = 8 * 1024;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

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
