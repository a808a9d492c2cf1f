import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { RpcError } from '../protocol/errors.js';
import { serialize } from '../protocol/frames.js';
import { failure } from '../protocol/messages.js';

/** §5.2: every JSON-RPC answer over HTTP is a 200 with a JSON body, errors included. */
export function sendJson(response: ServerResponse, body: string | Buffer, headers: OutgoingHttpHeaders = {}): void {
  response.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...headers,
  });
  response.end(body);
}

/** One error answering the whole frame (`id` null: the frame was not read, or not far enough to know its ids). */
export function refuse(response: ServerResponse, error: RpcError, headers: OutgoingHttpHeaders = {}): void {
  sendJson(response, serialize(failure(null, error)), headers);
}
