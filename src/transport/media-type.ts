import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { refuseUnread } from './unread-refusal.js';

/**
 * §5.2: a frame is posted as `Content-Type: application/json`. What a body says it is decides whether it is read as
 * JSON at all; the answer to one that is not is a transport-level failure the JSON-RPC layer never sees (§5.2 status
 * mapping: not 200), HTTP 415 — as Fastify answers its own unsupported types, and the listener its 404s.
 *
 * Read as JSON: no Content-Type; `application/json`, `application/*+json`, `application/json-rpc`,
 * `application/jsonrequest`; and what plain HTTP tools send for a body they were handed as text — `curl -d`'s
 * `application/x-www-form-urlencoded` (the README's quickstart), `fetch`'s `text/plain` for a string, and
 * `application/octet-stream` for bytes. Refused: any other type (text/html, multipart/form-data, application/xml...),
 * a charset other than UTF-8 (RFC 8259 §8.1: JSON exchanged between systems is UTF-8), and a Content-Encoding other
 * than identity (a gzip body is not JSON until inflated, and bodies are bounded as they arrive, §15.5).
 */
const AS_TEXT = new Set([
  'application/json',
  'application/json-rpc',
  'application/jsonrequest',
  'application/x-www-form-urlencoded',
  'application/octet-stream',
  'text/plain',
]);
const UTF8 = new Set(['utf-8', 'utf8', 'us-ascii']);
const CODING_HEADERS = [
  ['content-encoding', 'Content-Encoding'],
  ['transfer-encoding', 'Transfer-Encoding'],
] as const;

/** Why the body cannot be read as a JSON frame, from its headers alone; undefined when it can. */
export function unreadableBody(headers: IncomingHttpHeaders): string | undefined {
  // Node undoes `chunked` itself (RFC 9112 §7); any other transfer coding, like a content coding, is not JSON yet.
  for (const [header, name] of CODING_HEADERS) {
    const codings = (headers[header] ?? '').split(',').map((coding) => coding.trim().toLowerCase());
    const other = codings.find((coding) => coding !== 'identity' && coding !== '' && coding !== 'chunked');
    if (other !== undefined) return `${name} ${other} is not accepted: send the JSON body uncompressed`;
  }
  const type = headers['content-type'];
  if (type === undefined || type.trim() === '') return undefined;
  const [essence = '', ...parameters] = type.split(';').map((part) => part.trim().toLowerCase());
  const json = AS_TEXT.has(essence) || /^application\/[^/]+\+json$/.test(essence);
  if (!json) return `Content-Type ${essence} is not JSON: send application/json`;
  // Every charset named must be UTF-8: with two, which one a reader believes is anyone's guess.
  for (const parameter of parameters.filter((p) => p.startsWith('charset='))) {
    const name = parameter.slice('charset='.length).replace(/^"(.*)"$/, '$1');
    if (!UTF8.has(name)) return `charset ${name} is not accepted: JSON is UTF-8`;
  }
  return undefined;
}

/** HTTP 415 with the reason; `Accept-Encoding: identity` says which coding is accepted (RFC 9110 §12.5.3). */
export function refuseMediaType(response: ServerResponse, reason: string): void {
  refuseUnread(response, 415, 'Unsupported Media Type', reason, { 'accept-encoding': 'identity' });
}
