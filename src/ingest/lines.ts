/** One line of a byte stream, numbered from 1 (blank lines count, so the number points at the line in an editor). */
export type Line =
  | { readonly number: number; readonly bytes: Buffer }
  /** A line longer than the bound: dropped as it streamed past, only its length kept. */
  | { readonly number: number; readonly oversized: number };

const NEWLINE = 0x0a;

/**
 * Splits a byte stream into lines at '\n', whatever the read boundaries, holding at most `maxLineBytes` of one line.
 * A longer line is let go as it streams past and reported once, at its end, with its full length: one enormous line
 * costs no more memory than the bound (a line reader that builds the whole line first would need all of it, and
 * fails outright past V8's longest string). Bytes, not text, so a character split across reads is decoded whole.
 */
export class BoundedLines {
  #maxLineBytes: number;
  #parts: Buffer[] = [];
  /** Bytes of the current line so far, held or not. */
  #length = 0;
  #number = 0;

  constructor(maxLineBytes: number) {
    this.#maxLineBytes = maxLineBytes;
  }

  /** Lines from the next one on may hold up to `maxLineBytes` (a file whose first line says what follows). */
  allow(maxLineBytes: number): void {
    this.#maxLineBytes = maxLineBytes;
  }

  *push(chunk: Buffer): Generator<Line> {
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      this.#add(chunk.subarray(start, end));
      yield this.#finish();
      start = end + 1;
    }
    this.#add(chunk.subarray(start));
  }

  /** At the end of the stream: a last line without its '\n' is still a line. */
  *end(): Generator<Line> {
    if (this.#length > 0) yield this.#finish();
  }

  #add(piece: Buffer): void {
    this.#length += piece.length;
    if (this.#length <= this.#maxLineBytes) this.#parts.push(piece);
    else this.#parts = [];
  }

  #finish(): Line {
    this.#number += 1;
    const number = this.#number;
    const line =
      this.#length > this.#maxLineBytes
        ? { number, oversized: this.#length }
        : { number, bytes: Buffer.concat(this.#parts, this.#length) };
    this.#parts = [];
    this.#length = 0;
    return line;
  }
}

/** Whether the bytes hold nothing but JSON whitespace (space, tab, CR, LF). */
export function isBlank(bytes: Buffer): boolean {
  for (const byte of bytes) if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d && byte !== 0x0a) return false;
  return true;
}
