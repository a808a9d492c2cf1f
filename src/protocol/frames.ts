import { RpcError } from './errors.js';
import { failure, isJsonObject, requestId, type ErrorResponse } from './messages.js';

export type ParsedFrame = { ok: true; value: unknown } | { ok: false; reply: ErrorResponse };

/**
 * Deepest JSON nesting accepted in a frame (§15.5). Deeper values would overflow the stack of every recursive walk
 * over params (validation, hashing, serialising) and of ordinary JSON clients reading them back. It leaves room for
 * the deepest filter allowed (64 levels, each an object in an array) inside the envelope.
 */
export const MAX_NESTING = 160;

/** §4/JSON-RPC: text that is not JSON is answered -32700 with id null; a frame nested too deep is -32600. */
export function parseFrame(text: string): ParsedFrame {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    return {
      ok: false,
      reply: failure(null, RpcError.parseError(error instanceof Error ? error.message : 'invalid JSON')),
    };
  }
  // Each level takes an opening bracket: a text this short cannot nest too deep, and most frames are that short.
  if (text.length <= MAX_NESTING || !deeperThan(value, MAX_NESTING)) return { ok: true, value };
  const id = isJsonObject(value) ? requestId(value) : null;
  return { ok: false, reply: failure(id, RpcError.invalidRequest(`JSON nested deeper than ${MAX_NESTING} levels`)) };
}

/** Whether `value` nests objects and arrays more than `max` levels deep (iteratively: no recursion to overflow). */
export function deeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [item, depth] = next;
    if (typeof item !== 'object' || item === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * One compact JSON text: no embedded newline, so it is one NDJSON line (§5.1) and one SSE data line (§5.2).
 * §4.6: NaN and ±Infinity are not JSON and MUST NOT be emitted (JSON.stringify would write them as null): the last
 * line of defence substitutes a finite sentinel for any that a method let through.
 */
export function serialize(frame: unknown): string {
  return allFinite(frame) ? JSON.stringify(frame) : JSON.stringify(frame, finiteSentinel);
}

/**
 * §4.6's finite sentinel: ±Infinity becomes ±Number.MAX_VALUE, which keeps its place in any ordering (a score stays
 * the highest or the lowest); NaN, which has no place, becomes 0.
 */
function finiteSentinel(_key: string, value: unknown): unknown {
  if (typeof value !== 'number' || Number.isFinite(value)) return value;
  if (Number.isNaN(value)) return 0;
  return value > 0 ? Number.MAX_VALUE : -Number.MAX_VALUE;
}

/** Whether every number in `value` is finite: one iterative walk, about a tenth of what serialising costs. */
function allFinite(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'number') {
      if (!Number.isFinite(item)) return false;
    } else if (typeof item === 'object' && item !== null) {
      for (const child of Array.isArray(item) ? item : Object.values(item)) {
        // Numbers are checked here rather than stacked: a vector batch holds a million of them.
        if (typeof child === 'number' ? !Number.isFinite(child) : typeof child === 'object') stack.push(child);
      }
    }
  }
  return true;
}

/** A serialized answer and its size in UTF-8 bytes, measured once. */
export interface SerializedReply {
  readonly text: string;
  readonly bytes: number;
}

/**
 * An answer (one response or a batch of them) as one JSON text of at most `maxBytes` UTF-8 bytes (§15.5). A member
 * whose answer is larger, or too large to build at all, is answered -32013 instead, saying how to shrink it; a batch
 * whose members fit one by one but not together has its largest members replaced until it fits.
 */
export function serializeReply(reply: unknown, maxBytes: number): SerializedReply {
  if (!Array.isArray(reply)) return serializeMember(reply, maxBytes);
  const parts = reply.map((member) => serializeMember(member, maxBytes));
  let total = parts.reduce((sum, part) => sum + part.bytes + 1, 1);
  const largestFirst = parts.map((_, i) => i).sort((a, b) => parts[b]!.bytes - parts[a]!.bytes);
  for (const i of largestFirst) {
    if (total <= maxBytes) break;
    const refusal = tooLarge(reply[i], maxBytes);
    total += refusal.bytes - parts[i]!.bytes;
    parts[i] = refusal;
  }
  return { text: `[${parts.map((part) => part.text).join(',')}]`, bytes: total };
}

/** Results answered many times unchanged, with their JSON text (see `serializedOnce`). */
const knownResults = new WeakMap<object, string>();

/** Marks `result` as answered unchanged from now on: its JSON is made once, here, and reused for every answer. */
export function serializedOnce<T extends object>(result: T): T {
  knownResults.set(Object.freeze(result), serialize(result));
  return result;
}

/**
 * An answer whose result (or error) is known: its JSON around that text, in the key order `success()` and
 * `failure()` write.
 */
function knownAnswer(member: unknown): string | undefined {
  if (!isJsonObject(member) || Object.keys(member).length !== 3 || !('id' in member)) return undefined;
  const key = 'result' in member ? 'result' : 'error';
  const value = member[key];
  const known = isJsonObject(value) ? knownResults.get(value) : undefined;
  return known === undefined ? undefined : `{"jsonrpc":"2.0","id":${JSON.stringify(member.id)},"${key}":${known}}`;
}

function serializeMember(member: unknown, maxBytes: number): SerializedReply {
  let text: string | undefined = knownAnswer(member);
  try {
    text ??= serialize(member);
  } catch (error) {
    // V8 cannot build a string this long (about 512 MB): the answer is too large by any measure.
    if (!(error instanceof RangeError)) throw error;
  }
  const bytes = text === undefined ? Infinity : Buffer.byteLength(text);
  return text !== undefined && bytes <= maxBytes ? { text, bytes } : tooLarge(member, maxBytes);
}

function tooLarge(member: unknown, maxBytes: number): SerializedReply {
  const text = serialize(failure(isJsonObject(member) ? requestId(member) : null, answerTooLarge(maxBytes)));
  return { text, bytes: Buffer.byteLength(text) };
}

/** §15.5 -32013 for an answer over the cap, saying how to shrink it. */
export function answerTooLarge(maxBytes: number): RpcError {
  return RpcError.payloadTooLarge(
    `the answer exceeds the ${maxBytes}-byte limit (limits.maxResponseBytes): ask for fewer hits (k), ` +
      'leave text and metadata out (includeText: false), or split the batch',
  );
}

/**
 * About how many bytes `value` takes as JSON (strings by their length, numbers and punctuation roughly), walked
 * iteratively: cheap enough to run on every answer, and close enough to bound memory by.
 */
export function approximateBytes(value: unknown): number {
  let bytes = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') bytes += item.length + 2;
    else if (typeof item !== 'object' || item === null) bytes += 8;
    else if (Array.isArray(item)) {
      bytes += 2 + item.length;
      for (const child of item) stack.push(child);
    } else {
      const record = item as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        bytes += key.length + 4;
        stack.push(record[key]);
      }
    }
  }
  return bytes;
}
