/**
 * How much a JSON text will cost to parse, counted from its bytes as they arrive (§15.5): JSON.parse of a 16 MB body
 * of 900,000 keys holds the event loop for over a second, and nothing can interrupt it. Counting first, a chunk at a
 * time, lets a transport refuse such a frame before parsing it, at a cost spread over the reads.
 *
 * `tokens` counts structural characters outside strings — `{`, `[`, `,` and `:` — about one per value and key. Only
 * ASCII bytes matter, so UTF-8 needs no decoding: a multi-byte character never contains one of these bytes.
 */
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const COLON = 0x3a;

export class JsonShape {
  tokens = 0;
  #inString = false;
  #escaped = false;

  /** Counts the structural characters of `bytes`, the next piece of the text. */
  push(bytes: Uint8Array): void {
    let tokens = this.tokens;
    let inString = this.#inString;
    let escaped = this.#escaped;
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) escaped = true;
        else if (byte === QUOTE) inString = false;
      } else if (byte === QUOTE) inString = true;
      else if (byte === COMMA || byte === COLON || byte === OPEN_BRACE || byte === OPEN_BRACKET) tokens++;
    }
    this.tokens = tokens;
    this.#inString = inString;
    this.#escaped = escaped;
  }

  reset(): void {
    this.tokens = 0;
    this.#inString = false;
    this.#escaped = false;
  }
}
