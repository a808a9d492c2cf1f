import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/**
 * A request refused before its body is read (§5.2 status mapping: a transport-level failure the JSON-RPC layer never
 * sees), shaped as the listener's other non-RCP errors (Fastify's `statusCode`, `error`, `message`). The body is not
 * read, so the connection closes after it.
 */
export function refuseUnread(
  response: ServerResponse,
  status: number,
  error: string,
  message: string,
  headers: OutgoingHttpHeaders = {},
): void {
  const body = JSON.stringify({ statusCode: status, error, message });
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...headers,
    connection: 'close',
  });
  response.end(body);
}
