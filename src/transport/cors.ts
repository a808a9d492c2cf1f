import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';

/** §5.2 what a browser client of an allowed origin may send and read. */
const SENT_HEADERS = ['Content-Type', 'Authorization', 'Accept', 'RCP-Session'];
const READ_HEADERS = ['RCP-Session'];

/**
 * Preflights (`OPTIONS`) for the allowed origins, answered by @fastify/cors on the listener's Fastify instance. In a
 * scope of their own: the plugin's hook must not add CORS headers to Fastify's other answers (the operator endpoints,
 * 404s), which a page of an allowed origin has no business reading. With no origins nothing is registered, and a
 * preflight is Fastify's plain 404 (as the plugin answers one from an origin it refuses).
 */
export async function registerPreflights(app: FastifyInstance, origins: readonly string[]): Promise<void> {
  if (origins.length === 0) return;
  await app.register(async (scope) => {
    await scope.register(cors, {
      origin: [...origins],
      methods: ['POST', 'OPTIONS'],
      allowedHeaders: SENT_HEADERS,
      exposedHeaders: READ_HEADERS,
    });
  });
}

/**
 * The CORS headers of an RCP answer (the request after the preflight), as @fastify/cors sets them: the origin itself
 * when it is allowed, with the headers it may read; `Vary: Origin` either way, for caches. Undefined without origins.
 */
export function corsHeaders(
  origins: readonly string[],
): ((request: IncomingMessage, response: ServerResponse) => void) | undefined {
  if (origins.length === 0) return undefined;
  const allowed = new Set(origins);
  const readable = READ_HEADERS.join(', ');
  return (request, response) => {
    response.setHeader('vary', 'Origin');
    const origin = request.headers.origin;
    if (origin === undefined || !allowed.has(origin)) return;
    response.setHeader('access-control-allow-origin', origin);
    response.setHeader('access-control-expose-headers', readable);
  };
}

/**
 * §5.2 CORS governs what a page may read, not what it may send: a page may POST to any address its visitor's browser
 * can reach without asking first (a `text/plain` or form body needs no preflight), and a page whose host name was
 * rebound to this server's address (DNS rebinding) even posts as "same-origin". Browsers say who sent a request
 * (`Origin`; `Sec-Fetch-Site`), so a request from an origin not in `http.corsOrigins` is refused before its body is
 * read: a foreign page can neither write the corpus nor read it through a visitor. Clients that are not browsers
 * send neither header. Why the request is refused, or undefined when it may proceed.
 */
export function foreignOrigin(headers: IncomingHttpHeaders, origins: ReadonlySet<string>): string | undefined {
  const origin = headers.origin;
  if (origin !== undefined) {
    return origins.has(origin)
      ? undefined
      : `requests from origin ${origin} are refused: it is not in http.corsOrigins`;
  }
  const site = headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return `a ${site} browser request without an Origin is refused`;
  return undefined;
}
