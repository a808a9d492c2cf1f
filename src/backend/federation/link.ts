import type { JsonObject } from '../../protocol/messages.js';

/**
 * One connection to one RCP engine (stdio child or HTTP endpoint), as the gateway sees it: send a request, get its
 * JSON-RPC response frame. A link never interprets results; it rejects only when no response frame arrived
 * (transport death, deadline, cancellation) — with a `LinkError` saying which.
 */
export interface ResponseFrame {
  result?: JsonObject;
  error?: { code: number; message: string; data?: JsonObject };
}

export interface Link {
  request(method: string, params: JsonObject, timeoutMs: number, signal?: AbortSignal): Promise<ResponseFrame>;
  /** Counts (re)connections: a stdio engine restarted is a new process that must be initialized again. */
  readonly generation: number;
  close(): Promise<void>;
}

export type LinkFailure = 'closed' | 'timeout' | 'cancelled' | 'unreadable' | 'http';

export class LinkError extends Error {
  override name = 'LinkError';
  constructor(
    readonly kind: LinkFailure,
    message: string,
  ) {
    super(message);
  }
}
