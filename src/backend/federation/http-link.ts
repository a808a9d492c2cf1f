import { Agent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { JsonObject } from '../../protocol/messages.js';
import { LinkError, type Link, type ResponseFrame } from './link.js';

/** The largest engine answer read (characters of JSON): four times this server's own default answer cap. */
const MAX_ANSWER_CHARS = 64 * 1024 * 1024;

/**
 * An engine over HTTP (§5.2): `POST <url>/<method>` on pooled keep-alive connections, with the registry's extra
 * headers (credentials belong there, never in params, §15.6). The link keeps a session of its own on the engine:
 * each `initialize` opens a fresh one (whatever an earlier gateway process left there) and its token
 * (`_meta.session`) travels as `RCP-Session` on every later request; an engine that restarted answers that token
 * -32001, and the engine is initialized again. A body that is not a JSON-RPC response (an HTTP error page, a 429
 * without a frame) is a `LinkError`, not a guess.
 */
export class HttpLink implements Link {
  readonly generation = 1;
  readonly #agent: Agent;
  readonly #url: URL;
  #nextId = 1;
  #session: string | undefined;

  constructor(
    private readonly name: string,
    url: string,
    private readonly headers: Readonly<Record<string, string>>,
  ) {
    this.#url = new URL(url.replace(/\/+$/, ''));
    this.#agent =
      this.#url.protocol === 'https:'
        ? new HttpsAgent({ keepAlive: true, maxSockets: 64 })
        : new Agent({ keepAlive: true, maxSockets: 64 });
  }

  request(method: string, params: JsonObject, timeoutMs: number, signal?: AbortSignal): Promise<ResponseFrame> {
    // §4.7: ids are unique among this client's requests in flight (an engine may keep one session for us).
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.#nextId++, method, params });
    const url = new URL(`${this.#url.pathname}/${method}`, this.#url);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<ResponseFrame>((resolve, reject) => {
      let settled = false;
      const fail = (error: LinkError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        req.destroy();
        reject(error);
      };
      const req = send(
        url,
        {
          method: 'POST',
          agent: this.#agent,
          headers: {
            ...this.headers,
            ...this.#sessionHeader(method),
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            text += chunk;
            // §15.5: an engine's answer is held whole before parsing: bounded, so a broken engine costs one call.
            if (text.length > MAX_ANSWER_CHARS) {
              fail(new LinkError('unreadable', `engine ${this.name}: an answer over ${MAX_ANSWER_CHARS} characters`));
            }
          });
          response.on('error', () => fail(new LinkError('closed', `engine ${this.name}: connection lost`)));
          response.on('end', () => {
            if (settled) return;
            let frame: unknown;
            try {
              frame = JSON.parse(text);
            } catch {
              return fail(
                new LinkError('http', `engine ${this.name}: HTTP ${response.statusCode} without a JSON-RPC answer`),
              );
            }
            if (typeof frame !== 'object' || frame === null || !('result' in frame || 'error' in frame)) {
              return fail(new LinkError('unreadable', `engine ${this.name}: not a JSON-RPC response`));
            }
            settled = true;
            clearTimeout(timer);
            signal?.removeEventListener('abort', onAbort);
            if (method === 'initialize') this.#session = sessionToken(frame as ResponseFrame);
            resolve(frame as ResponseFrame);
          });
        },
      );
      const timer = setTimeout(
        () => fail(new LinkError('timeout', `engine ${this.name}: no answer in ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onAbort = () => fail(new LinkError('cancelled', `engine ${this.name}: request cancelled`));
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', (error) => fail(new LinkError('closed', `engine ${this.name}: ${error.message}`)));
      req.end(body);
    });
  }

  close(): Promise<void> {
    this.#agent.destroy();
    return Promise.resolve();
  }

  /** `initialize` asks for a new session (`new` is a token no engine issued); anything else runs in ours. */
  #sessionHeader(method: string): Record<string, string> {
    const token = method === 'initialize' ? 'new' : this.#session;
    return token === undefined ? {} : { 'rcp-session': token };
  }
}

function sessionToken(frame: ResponseFrame): string | undefined {
  const session = (frame.result?._meta as { session?: unknown } | undefined)?.session;
  return typeof session === 'string' ? session : undefined;
}
