import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { RpcError } from '../protocol/errors.js';
import { RpcErrorCode } from '../protocol/codes.js';
import { callerScoped } from '../protocol/context.js';

/**
 * §10 cursors: opaque, tamper-evident (HMAC-SHA256 under a per-process or configured secret), bound to the request they continue
 * and to the corpus snapshot they page through. A forged or mangled cursor is -32602 (`data.field: "cursor"`); a
 * cursor for another request shape is -32602; a cursor whose snapshot has changed (or from before a restart) is
 * -32015 NotFound, so pages never silently skip or repeat hits.
 */
export interface CursorState {
  /** Hits already returned. */
  readonly offset: number;
  /** §7.7.3 with `sessionId`: the session's mark at the first page (what the pages skip as seen before them). */
  readonly seenMark?: number | undefined;
  readonly indexVersion: string;
  /** Digest of the request's params (cursor excluded). */
  readonly request: string;
}

export class CursorCodec {
  readonly #secret: Buffer;
  readonly #epoch: string;

  /**
   * `secret`: the operator's shared key, so that a cursor verifies on every replica that has it (and across restarts:
   * the snapshot check still ends a cursor when the corpus changed). Without one, a key of this process.
   */
  constructor(secret = '') {
    this.#secret = secret === '' ? randomBytes(32) : createHmac('sha256', 'rcp-cursor-key').update(secret).digest();
    this.#epoch =
      secret === '' ? randomBytes(6).toString('hex') : createHmac('sha256', this.#secret).update('epoch').digest('hex');
  }

  #sign(payload: string): string {
    return createHmac('sha256', this.#secret).update(payload).digest('base64url');
  }

  encode(state: CursorState): string {
    const payload = Buffer.from(JSON.stringify({ ...state, epoch: this.#epoch })).toString('base64url');
    return `${payload}.${this.#sign(payload)}`;
  }

  decode(cursor: string, request: string, indexVersion: string): CursorState {
    const [payload = '', signature = ''] = cursor.split('.');
    const expected = Buffer.from(this.#sign(payload));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw RpcError.invalidParams('cursor', 'not a cursor this server issued');
    }
    const state = JSON.parse(Buffer.from(payload, 'base64url').toString()) as CursorState & { epoch: string };
    if (state.request !== request) throw RpcError.invalidParams('cursor', 'belongs to a different request');
    if (state.indexVersion !== indexVersion || state.epoch !== this.#epoch) {
      throw new RpcError(RpcErrorCode.NotFound, 'cursor expired', {
        detail: 'the corpus changed since this cursor was issued; start again',
      });
    }
    return state;
  }
}

/** A stable digest of the params a cursor continues (everything but the cursor itself and _meta), and its caller. */
export function requestDigest(params: Record<string, unknown>, caller = ''): string {
  const rest = Object.fromEntries(Object.entries(params).filter(([key]) => key !== 'cursor' && key !== '_meta'));
  const canonical = canonicalJson(rest);
  return createHmac('sha256', 'rcp-request').update(callerScoped(caller, canonical)).digest('base64url');
}

/** JSON with object keys sorted at every depth, so equal params digest equally whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonicalJson(inner)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
