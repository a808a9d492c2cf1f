/**
 * How much a JSON text will cost to parse, counted from its bytes as they arrive (§15.5): JSON.parse of a 16 MB body
 * of 900,000 keys holds the event loop for over a second, and nothing can interrupt it. Counting first, a chunk at a
 * time, lets a transport refuse such a frame before parsing it, at a cost spread over the reads.
 *
 * `tokens` weighs what parsing costs: structural characters outside strings — `{`, `[`, `,` — count one each, an
 * object key (`:`) counts KEY_WEIGHT (building an object of distinct keys costs about ten times an array element),
 * and escapes inside strings count one per ESCAPES_PER_TOKEN (a string of escapes decodes slowly, but ordinary text
 * with its newlines and quotes must stay cheap). Only ASCII bytes matter, so UTF-8 needs no decoding: a multi-byte
 * character never contains one of these bytes.
 */
const KEY_WEIGHT = 4;
const ESCAPES_PER_TOKEN = 8;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const COLON = 0x3a;

/** The most `tokens` one byte of text can add (a colon): a text of n bytes counts at most n times this. */
export const MAX_TOKENS_PER_BYTE = KEY_WEIGHT;

export class JsonShape {
  #structural = 0;
  #escapes = 0;
  #inString = false;
  #escaped = false;

  /** The weighted count so far. */
  get tokens(): number {
    return this.#structural + Math.floor(this.#escapes / ESCAPES_PER_TOKEN);
  }

  /** Counts the structural characters of `bytes`, the next piece of the text. */
  push(bytes: Uint8Array): void {
    let structural = this.#structural;
    let escapes = this.#escapes;
    let inString = this.#inString;
    let escaped = this.#escaped;
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) {
          escaped = true;
          escapes++;
        } else if (byte === QUOTE) inString = false;
      } else if (byte === QUOTE) inString = true;
      else if (byte === COLON) structural += KEY_WEIGHT;
      else if (byte === COMMA || byte === OPEN_BRACE || byte === OPEN_BRACKET) structural++;
    }
    this.#structural = structural;
    this.#escapes = escapes;
    this.#inString = inString;
    this.#escaped = escaped;
  }

  reset(): void {
    this.#structural = 0;
    this.#escapes = 0;
    this.#inString = false;
    this.#escaped = false;
  }
}
