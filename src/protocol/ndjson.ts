import { JsonShape } from './json-shape.js';

/**
 * §5.1 NDJSON framing: splits a byte stream into lines at '\n', whatever the read boundaries
 * (partial and coalesced reads), tolerating blank lines and a trailing '\r'. Works on bytes so that
 * a multi-byte UTF-8 character split across reads is decoded whole. A line longer than `maxLineBytes`, or with more
 * than `maxTokens` JSON values (JsonShape: it would stall the event loop to parse), is reported once and discarded
 * up to its newline, so memory and parse time stay bounded.
 */
export type LineEvent =
  { kind: 'line'; text: string } | { kind: 'oversized'; bytes: number } | { kind: 'too-many-values'; tokens: number };

const NEWLINE = 0x0a;

export class LineSplitter {
  readonly #maxLineBytes: number;
  readonly #maxTokens: number;
  readonly #shape = new JsonShape();
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #discarding = false;

  constructor(maxLineBytes: number, maxTokens = Number.POSITIVE_INFINITY) {
    this.#maxLineBytes = maxLineBytes;
    this.#maxTokens = maxTokens;
  }

  *push(chunk: Buffer): Generator<LineEvent> {
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      const event = this.#take(chunk.subarray(start, end), true);
      if (event !== undefined) yield event;
      start = end + 1;
    }
    const event = this.#take(chunk.subarray(start), false);
    if (event !== undefined) yield event;
  }

  /** At EOF: a final line without its '\n' is still a message. */
  *end(): Generator<LineEvent> {
    const event = this.#take(Buffer.alloc(0), true);
    if (event !== undefined) yield event;
  }

  #take(piece: Buffer, complete: boolean): LineEvent | undefined {
    if (!this.#discarding && piece.length > 0) {
      this.#pending.push(piece);
      this.#pendingBytes += piece.length;
      this.#shape.push(piece);
    }
    let event: LineEvent | undefined;
    if (!this.#discarding && this.#pendingBytes > this.#maxLineBytes) {
      event = { kind: 'oversized', bytes: this.#pendingBytes };
    } else if (!this.#discarding && this.#shape.tokens > this.#maxTokens) {
      event = { kind: 'too-many-values', tokens: this.#shape.tokens };
    }
    if (event !== undefined) {
      this.#discarding = true;
      this.#reset();
    }
    if (!complete) return event;
    if (this.#discarding) {
      this.#discarding = false;
      return event;
    }
    const text = Buffer.concat(this.#pending, this.#pendingBytes)
      .toString('utf8')
      .replace(/^\uFEFF/, '')
      .replace(/\r$/, '');
    this.#reset();
    return text.trim() === '' ? undefined : { kind: 'line', text };
  }

  #reset(): void {
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#shape.reset();
  }
}

/** Why a line was discarded unparsed, in words shared by the stdio transports (§15.5). */
export function refusalOf(
  event: Exclude<LineEvent, { kind: 'line' }>,
  limits: { maxLineBytes: number; maxFrameValues?: number | undefined },
): string {
  return event.kind === 'oversized'
    ? `frame of ${event.bytes}+ bytes exceeds ${limits.maxLineBytes}`
    : `frame of more than ${limits.maxFrameValues} JSON values (${event.tokens}+)`;
}
