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

/** The body of `stream` as text, or a BodyRefusal as soon as one applies; what it held is given back either way. */
export async function receiveBody(
  stream: Readable,
  declaredBytes: number | undefined,
  limits: BodyLimits,
  budget: BodyBudget,
): Promise<string> {
  if (declaredBytes !== undefined && declaredBytes > limits.maxBytes) throw tooLarge(limits);
  const shape = new JsonShape();
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (bytes + chunk.length > limits.maxBytes) throw tooLarge(limits);
      if (!budget.take(chunk.length)) {
        throw new BodyRefusal('busy', `request bodies being received exceed ${budget.maxBytes} bytes; retry`);
      }
      bytes += chunk.length;
      chunks.push(chunk);
      shape.push(chunk);
      if (shape.tokens > limits.maxTokens) {
        throw new BodyRefusal('too-many-values', `body has more than ${limits.maxTokens} JSON values`);
      }
    }
    return Buffer.concat(chunks, bytes).toString('utf8');
  } finally {
    budget.give(bytes);
  }
}

const tooLarge = (limits: BodyLimits) => new BodyRefusal('too-large', `body exceeds ${limits.maxBytes} bytes`);
