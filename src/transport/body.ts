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
  let chunks: Buffer[] = [];
  let held = 0;
  let received = 0;
  let refusal: BodyRefusal | undefined;
  return new Promise<Buffer>((resolve, reject) => {
    const settle = (error: Error | undefined): void => {
      stream.off('data', onData).off('end', onEnd).off('error', onClose).off('close', onClose);
      // A body of one read (most of them) is that read's bytes, not a copy.
      const body = error !== undefined ? error : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, held);
      budget.give(held);
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
      if (refusal !== undefined) {
        budget.give(held);
        [chunks, held] = [[], 0];
      }
    };
    const onEnd = (): void => settle(refusal);
    // Node reports a connection lost mid-body as an error of the request ('aborted'), then closes it.
    const onClose = (): void => settle(new BodyAbandoned('the client closed the connection before its body ended'));
    stream.on('data', onData).once('end', onEnd).once('error', onClose).once('close', onClose);
  });

  /**
   * Keeps `chunk` if the budget and the value count allow it. The values are counted only once the body is long enough
   * to hold too many (no byte weighs more than MAX_TOKENS_PER_BYTE), and then from its first byte: most bodies are far
   * shorter, and are not scanned at all.
   */
  function keep(chunk: Buffer): boolean {
    if (!budget.take(chunk.length)) return false;
    held += chunk.length;
    chunks.push(chunk);
    if (held * MAX_TOKENS_PER_BYTE <= limits.maxTokens) return true;
    if (shape === undefined) {
      shape = new JsonShape();
      for (const kept of chunks) shape.push(kept);
    } else shape.push(chunk);
    return shape.tokens <= limits.maxTokens;
  }
}

function refusalOf(tokens: number, limits: BodyLimits, budget: BodyBudget): BodyRefusal {
  return tokens > limits.maxTokens
    ? new BodyRefusal('too-many-values', `body has more than ${limits.maxTokens} JSON values`)
    : new BodyRefusal('busy', `request bodies being received exceed ${budget.maxBytes} bytes; retry`);
}

const tooLarge = (limits: BodyLimits) => new BodyRefusal('too-large', `body exceeds ${limits.maxBytes} bytes`);
