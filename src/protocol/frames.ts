import { RpcError } from './errors.js';
import { failure, type ErrorResponse } from './messages.js';

export type ParsedFrame = { ok: true; value: unknown } | { ok: false; reply: ErrorResponse };

/** §4/JSON-RPC: text that is not JSON is answered -32700 with id null. */
export function parseFrame(text: string): ParsedFrame {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return {
      ok: false,
      reply: failure(null, RpcError.parseError(error instanceof Error ? error.message : 'invalid JSON')),
    };
  }
}

/** One compact JSON text: no embedded newline, so it is one NDJSON line (§5.1) and one SSE data line (§5.2). */
export function serialize(frame: unknown): string {
  return JSON.stringify(frame);
}
