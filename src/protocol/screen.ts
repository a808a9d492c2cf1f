import type { ErrorObject, RpcError } from './errors.js';
import { serializedOnce } from './frames.js';
import { isJsonObject, requestId, type Response } from './messages.js';

/**
 * Screening of a parsed frame before the session sees it (authorisation, admission): each member `refuse` objects
 * to is answered with its error — a notification silently dropped (§4.5) — and the rest proceed. A batch whose every
 * member was refused does not become an empty batch (which would be a different error, §11).
 */
export interface Screened {
  /** What the session should handle; undefined when nothing is left. */
  accepted: unknown;
  rejected: Response[];
}

export type Refusal = (method: unknown) => RpcError | undefined | Promise<RpcError | undefined>;

export async function screen(value: unknown, refuse: Refusal): Promise<Screened> {
  const refusal = (member: unknown) => (isJsonObject(member) ? refuse(member.method) : undefined);
  // One refusal usually answers every member of a batch: its error object is built and serialized once.
  const bodies = new Map<RpcError, ErrorObject>();
  const bodyOf = (error: RpcError) =>
    bodies.get(error) ?? bodies.set(error, serializedOnce(error.toJSON())).get(error)!;
  const answer = (member: unknown, error: RpcError): Response[] =>
    isJsonObject(member) && 'id' in member ? [{ jsonrpc: '2.0', id: requestId(member), error: bodyOf(error) }] : [];
  if (!Array.isArray(value)) {
    const error = await refusal(value);
    return error === undefined
      ? { accepted: value, rejected: [] }
      : { accepted: undefined, rejected: answer(value, error) };
  }
  const errors = await Promise.all(value.map(async (member) => refusal(member)));
  const rejected: Response[] = [];
  const accepted = value.filter((member, i) => {
    const error = errors[i];
    if (error !== undefined) rejected.push(...answer(member, error));
    return error === undefined;
  });
  return { accepted: accepted.length === 0 && value.length > 0 ? undefined : accepted, rejected };
}

/**
 * The session's reply with the screened-out answers added. §11: a batch is answered with an array, even when a
 * single member of it is answered, and that one was refused before the session saw it.
 */
export function mergeReplies(
  handled: Response | Response[] | undefined,
  rejected: readonly Response[],
  batch: boolean,
): Response | Response[] | undefined {
  if (rejected.length === 0) return handled;
  if (handled === undefined) return batch ? [...rejected] : rejected[0];
  return [...(Array.isArray(handled) ? handled : [handled]), ...rejected];
}
