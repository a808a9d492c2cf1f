import { createHash } from 'node:crypto';
import { callerScoped } from '../protocol/context.js';
import { isJsonObject, type JsonObject } from '../protocol/messages.js';

/**
 * What a gateway sends an engine on its caller's behalf (§16.2). The engine sees the gateway as one caller, so the
 * names that key per-caller state there — `_meta.idempotencyKey` (§7.10) and `sessionId` (§7.7.3) — are scoped by the
 * gateway's own caller (§15.6): a digest of the caller and the name, within the engine's length limits. Without it,
 * one key's idempotency key or session id would reach another key's write or dedup memory through the gateway.
 */
export function scopedForCaller(params: JsonObject, caller: string): JsonObject {
  const scoped: JsonObject = { ...params };
  if (typeof params.sessionId === 'string') scoped.sessionId = digest(caller, params.sessionId);
  const meta = params._meta;
  if (isJsonObject(meta) && typeof meta.idempotencyKey === 'string') {
    scoped._meta = { ...meta, idempotencyKey: digest(caller, meta.idempotencyKey) };
  }
  return scoped;
}

const digest = (caller: string, name: string): string =>
  createHash('sha256').update(callerScoped(caller, name)).digest('hex');
