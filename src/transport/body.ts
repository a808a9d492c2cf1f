import type { Readable } from 'node:stream';
import { JsonShape } from '../protocol/json-shape.js';

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
 * goes at once: waiting for a body that may never end is what the budget is against.
 */
export async function receiveBody(
  stream: Readable,
  declaredBytes: number | undefined,
  limits: BodyLimits,
  budget: BodyBudget,
): Promise<Buffer> {
  if (declaredBytes !== undefined && declaredBytes > limits.maxBytes) throw tooLarge(limits);
  const shape = new JsonShape();
  let chunks: Buffer[] = [];
  let held = 0;
  let received = 0;
  let refusal: BodyRefusal | undefined;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      received += chunk.length;
      if (received > limits.maxBytes) throw tooLarge(limits);
      if (refusal !== undefined) continue; // drained, not kept
      refusal = keep(chunk) ? undefined : refusalOf(shape, limits, budget);
      if (refusal?.reason === 'busy') throw refusal;
      if (refusal !== undefined) {
        budget.give(held);
        [chunks, held] = [[], 0];
      }
    }
    if (refusal !== undefined) throw refusal;
    return Buffer.concat(chunks, held);
  } finally {
    budget.give(held);
  }

  /** Keeps `chunk` if the budget and the value count allow it. */
  function keep(chunk: Buffer): boolean {
    if (!budget.take(chunk.length)) return false;
    held += chunk.length;
    chunks.push(chunk);
    shape.push(chunk);
    return shape.tokens <= limits.maxTokens;
  }
}

function refusalOf(shape: JsonShape, limits: BodyLimits, budget: BodyBudget): BodyRefusal {
  return shape.tokens > limits.maxTokens
    ? new BodyRefusal('too-many-values', `body has more than ${limits.maxTokens} JSON values`)
    : new BodyRefusal('busy', `request bodies being received exceed ${budget.maxBytes} bytes; retry`);
}

const tooLarge = (limits: BodyLimits) => new BodyRefusal('too-large', `body exceeds ${limits.maxBytes} bytes`);
