import { RpcError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/messages.js';
import type { Session } from '../protocol/session.js';
import { outgoingTrace } from '../protocol/tracing.js';
import { ConnectionClosedError, UnreadableFrameError } from './client-errors.js';
import type { Channel, Frame, SendOptions } from './channel.js';

/** How one request is sent: a client-side wait limit, a cancel, and where its notifications go. */
export interface RequestOptions {
  readonly signal?: AbortSignal | undefined;
  /** The longest wait for the answer; past it the request fails with ClientTimeoutError (and is cancelled). */
  readonly timeoutMs?: number | undefined;
  /** Progress and log notifications of this request: set, the request asks for them with `_meta.progressToken` (§9). */
  readonly onNotification?: ((frame: Frame) => void) | undefined;
}

/**
 * The one RCP requester: every call this package makes to an RCP server — the typed client's, the gateway's to its
 * engines, the MCP bridge's and the eval's to their in-process session — is framed, sent and answered here. A request
 * gets a fresh id (§4.7: unique among this requester's requests in flight), goes out on a channel (stdio, HTTP, or an
 * in-process session), and resolves with its result or rejects with its error answer as an `RpcError` (§12.1), or,
 * when no answer came, with the channel's own failure (ConnectionClosedError, ClientTimeoutError, …). Retries,
 * capability gates and sessions are the callers' policies, not this one's.
 */
export class Requester {
  #nextId = 0;

  constructor(readonly channel: Channel) {}

  async call(method: string, params: JsonObject, options: RequestOptions = {}): Promise<JsonObject> {
    const id = ++this.#nextId;
    const progressToken = options.onNotification === undefined ? undefined : `progress-${id}`;
    // §17.2: a request sent for a request that runs in a trace (a gateway's hop) carries that trace on, in place of
    // any the params forward (a caller's own `_meta.traceparent` names the caller's span, not this hop's).
    const trace = outgoingTrace();
    const own = isJsonObject(params._meta) ? params._meta : {};
    const withMeta =
      trace === undefined && progressToken === undefined
        ? params
        : { ...params, _meta: { ...own, ...trace?.meta, ...(progressToken === undefined ? {} : { progressToken }) } };
    const send: SendOptions = {
      signal: options.signal,
      timeoutMs: options.timeoutMs,
      onNotification: options.onNotification,
      progressToken,
      traceHeaders: trace?.headers,
    };
    return result(await this.channel.send({ jsonrpc: '2.0', id, method, params: withMeta }, send));
  }

  close(): Promise<void> {
    return this.channel.close();
  }
}

/** An answer's result, or its error as an RpcError; an answer that is neither is unreadable (§11). */
function result(answer: Frame): JsonObject {
  const error = answer.error;
  if (isJsonObject(error)) {
    const data = isJsonObject(error.data) ? error.data : {};
    throw RpcError.answered(Number(error.code), String(error.message), data);
  }
  if (!('result' in answer)) {
    throw new UnreadableFrameError(`not a JSON-RPC response: ${JSON.stringify(answer).slice(0, 200)}`);
  }
  return (answer.result ?? {}) as JsonObject;
}

/**
 * A channel to a session of this process (`app.createSession()`): the same dispatch ladder, validation and limits as
 * any transport, without one (docs/architecture.md §4.3). Notifications go to the request's `onNotification`.
 */
export class SessionChannel implements Channel {
  constructor(private readonly session: Pick<Session, 'handle'>) {}

  async send(frame: Frame, options: SendOptions): Promise<Frame> {
    const notify = options.onNotification;
    const reply = await this.session.handle(frame, notify && ((note) => notify({ ...note })));
    const answer: unknown = Array.isArray(reply) ? reply[0] : reply;
    if (!isJsonObject(answer)) throw new ConnectionClosedError('the session gave no answer');
    return answer;
  }

  notify(frame: Frame): void {
    void this.session.handle(frame);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
