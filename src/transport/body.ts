import type { Readable } from 'node:stream';
import { JsonShape, MAX_TOKENS_PER_BYTE } from '../protocol/json-shape.js';

/**
 * Receiving HTTP bodies (§15.5). A body is read as it arrives and refused as soon as it is known to be too much:
 * over `maxBytes`, with more than `maxTokens` JSON values (it would stall the event loop to parse), or — across every
 * connection at once — past `maxBufferedBytes` of bodies still arriving (300 clients each sending 16 MB but the last
 * byte would otherwise hold 4.8 GB). Each refusal is a BodyRefusal that the transport answers in JSON-RPC.
 */
export interface BodyLimits {
  readonly maxBytes: number;
  readonly maxTokens: number;
}

export class BodyRefusal extends Error {
  override name = 'BodyRefusal';

  constructor(
    readonly reason: 'too-large' | 'too-many-values' | 'busy',
    message: string,
  ) {
    super(message);
  }
}

/**
 * The client closed its connection, or it was cut (the body timeout), before its body ended: there is no one left to
 * answer, and nothing went wrong on the server's side (§15.5 — a client may hang up at any time).
 */
export class BodyAbandoned extends Error {
  override name = 'BodyAbandoned';
}

/** Bytes of bodies being received, all connections together. */
export class BodyBudget {
  #held = 0;

  constructor(readonly maxBytes: number) {}

  get held(): number {
    return this.#held;
  }

  take(bytes: number): boolean {
    if (this.#held + bytes > this.maxBytes) return false;
    this.#held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#held -= bytes;
  }
}

/**
 * The body of `stream` as bytes, or a BodyRefusal; what it held is given back either way. Past a refusal for its
 * values, the rest of the body (within `maxBytes`) is read and dropped, never kept, so that the client finishes
 * sending and reads its answer (an HTTP client still uploading cannot read one). Past the shared budget the answer
 * goes at once: waiting for a body that may never end is what the budget is against. Read with plain stream events,
 * not an async iterator: on the path of every request, the iterator's promises and listeners cost more than a small
 * body's parse.
 */
export function receiveBody(
  stream: Readable,
  declaredBytes: number | undefined,
  limits: BodyLimits,
  budget: BodyBudget,
): Promise<Buffer> {
  if (declaredBytes !== undefined && declaredBytes > limits.maxBytes) return Promise.reject(tooLarge(limits));
  let shape: JsonShape | undefined;
  const bytes = new BodyBytes(declaredBytes ?? limits.maxBytes, budget);
  let received = 0;
  let refusal: BodyRefusal | undefined;
  return new Promise<Buffer>((resolve, reject) => {
    const settle = (error: Error | undefined): void => {
      stream.off('data', onData).off('end', onEnd).off('error', onClose).off('close', onClose);
      const body = error ?? bytes.whole();
      bytes.release();
      if (body instanceof Error) reject(body);
      else resolve(body);
    };
    // Refused while arriving: nothing more is read; the answer says `connection: close`, which ends the socket once
    // it is written (destroying the request here would take the socket, and the answer, with it).
    const stop = (error: BodyRefusal): void => {
      settle(error);
      stream.pause();
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > limits.maxBytes) return stop(tooLarge(limits));
      if (refusal !== undefined) return; // drained, not kept
      refusal = keep(chunk) ? undefined : refusalOf(shape?.tokens ?? 0, limits, budget);
      if (refusal?.reason === 'busy') return stop(refusal);
      if (refusal !== undefined) bytes.release();
    };
    const onEnd = (): void => settle(refusal);
    // Node reports a connection lost mid-body as an error of the request ('aborted'), then closes it.
    const onClose = (): void => settle(new BodyAbandoned('the client closed the connection before its body ended'));
    stream.on('data', onData).once('end', onEnd).once('error', onClose).once('close', onClose);
    // Gone before its body was asked for (it waited for its corpus to open): its 'close' has already been emitted.
    if (stream.destroyed) onClose();
  });

  /**
   * Keeps `chunk` if the budget and the value count allow it. The values are counted only once the body is long enough
   * to hold too many (no byte weighs more than MAX_TOKENS_PER_BYTE), and then from its first byte: most bodies are far
   * shorter, and are not scanned at all.
   */
  function keep(chunk: Buffer): boolean {
    if (!bytes.push(chunk)) return false;
    if (bytes.length * MAX_TOKENS_PER_BYTE <= limits.maxTokens) return true;
    if (shape === undefined) {
      shape = new JsonShape();
      shape.push(bytes.whole());
    } else shape.push(chunk);
    return shape.tokens <= limits.maxTokens;
  }
}

/**
 * Reads and drops the rest of a refused body as it arrives (§15.5), so that a client still sending it finishes and
 * reads its answer: a connection closed with bytes unread is reset, and a client still writing then gets EPIPE or
 * ECONNRESET in place of the answer. Nothing is kept, so the rest costs no memory and no budget; the body timeout
 * still bounds it in time. False, and nothing read, when the body is declared past `bound` bytes (the connection is to
 * be closed after the answer); an undeclared body that runs past `bound` dropped bytes is `cut` there.
 */
export function dropRest(stream: Readable, declaredBytes: number | undefined, bound: number, cut: () => void): boolean {
  if (declaredBytes !== undefined && declaredBytes > bound) return false;
  if (stream.readableEnded) return true;
  let dropped = 0;
  const onData = (chunk: Buffer): void => {
    dropped += chunk.length;
    if (dropped <= bound) return;
    stream.off('data', onData);
    cut();
  };
  stream.on('data', onData).once('end', () => stream.off('data', onData));
  stream.resume();
  return true;
}

/**
 * A body's bytes as they arrive, charged to the shared budget byte for byte as received. A body of one read (most of
 * them) is that read's bytes, not a copy. A longer one is copied into one buffer as it arrives, grown by doubling up
 * to its declared length: never allocated from the declaration alone (a client that declares 16 MB and sends a byte a
 * second holds what it sent), and never more than twice what arrived, so bodies in memory stay within twice the
 * budget. Keeping the reads themselves instead held every 64 KB read of a slow upload until a full collection (they
 * outlive the young generation), and joined them in a copy at the end: 30 concurrent 15 MB bodies left the process at
 * 2.5-3.2x its idle RSS seconds after they were answered.
 */
class BodyBytes {
  #first: Buffer | undefined;
  #buffer: Buffer | undefined;
  #length = 0;

  constructor(
    readonly maxBytes: number,
    readonly budget: BodyBudget,
  ) {}

  get length(): number {
    return this.#length;
  }

  /** Keeps `chunk`; false (nothing kept) when the budget has no room for it. */
  push(chunk: Buffer): boolean {
    if (!this.budget.take(chunk.length)) return false;
    const length = this.#length + chunk.length;
    if (this.#length === 0) this.#first = chunk;
    else {
      if (length > (this.#buffer?.length ?? this.#length)) this.#grow(length);
      chunk.copy(this.#buffer!, this.#length);
    }
    this.#length = length;
    return true;
  }

  /** The bytes kept so far (a view, not a copy). */
  whole(): Buffer {
    if (this.#buffer !== undefined) return this.#buffer.subarray(0, this.#length);
    return this.#first ?? Buffer.alloc(0);
  }

  /** Gives back to the budget what these bytes were charged, and lets go of them. */
  release(): void {
    this.budget.give(this.#length);
    this.#length = 0;
    this.#first = undefined;
    this.#buffer = undefined;
  }

  /** A buffer of at least `length` bytes holding what was kept: double the last, up to the body's most. */
  #grow(length: number): void {
    const doubled = Math.min(this.maxBytes, Math.max(2 * (this.#buffer?.length ?? this.#length), GROWN_MIN));
    const buffer = Buffer.allocUnsafeSlow(Math.max(length, doubled));
    this.whole().copy(buffer);
    this.#buffer = buffer;
    this.#first = undefined;
  }
}

/** The first buffer a body of several reads is copied into: a few of Node's 64 KB reads. */
const GROWN_MIN = 256 * 1024;

function refusalOf(tokens: number, limits: BodyLimits, budget: BodyBudget): BodyRefusal {
  return tokens > limits.maxTokens
    ? new BodyRefusal('too-many-values', `body has more than ${limits.maxTokens} JSON values`)
    : new BodyRefusal('busy', `request bodies being received exceed ${budget.maxBytes} bytes; retry`);
}

const tooLarge = (limits: BodyLimits) => new BodyRefusal('too-large', `body exceeds ${limits.maxBytes} bytes`);
