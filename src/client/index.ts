import { capabilityFor, isCoreMethod, METHODS } from '../protocol/method-table.js';
import { HttpChannel, StdioChannel, type Channel, type Frame } from './channel.js';
import { RpcError } from '../protocol/errors.js';
import type {
  EmbedMultiParams,
  EmbedParams,
  EmbedSparseParams,
  IndexAddParams,
  IndexDeleteParams,
  RerankParams,
  RetrieveParams,
} from '../protocol/schemas/params.js';
import type { ResultOf } from '../protocol/schemas/results.js';
import { Requester } from './requester.js';
import { DEFAULT_RETRY, retrying, type RetryPolicy } from './retry.js';
import { RpcErrorCode } from '../protocol/codes.js';

export { ClientTimeoutError, ConnectionClosedError, HttpStatusError, UnreadableFrameError } from './client-errors.js';
/** The wire error type; `RcpError` is the name docs/clients.md publishes for it. */
export { RpcError, RpcError as RcpError } from '../protocol/errors.js';
export type { RetryPolicy } from './retry.js';

/**
 * A typed RCP client (`import { connect } from 'rcp-server/client'`), stdio or HTTP:
 *
 *   const rcp = await connect({ url: 'http://127.0.0.1:8080/rcp', apiKey: process.env.RCP_KEY });
 *   const { hits } = await rcp.retrieve({ query: 'heart disease', k: 5 });
 *   for await (const event of rcp.stream('retrieve', { query: 'x', k: 5 })) console.log(event);
 *   await rcp.close();
 *
 * Calls are capability-gated: a method the server did not advertise fails before any I/O with -32003. Errors are an
 * `RpcError` (alias `RcpError`: the answer's `.code`, `.message`, `.data`; `retryable()`, `retryAfterMs()`) or, for failures that
 * never reached an answer, `ConnectionClosedError`, `ClientTimeoutError`, `HttpStatusError`, `UnreadableFrameError`.
 * Retryable errors are retried per §12.2 (never after -32006); an AbortSignal cancels (`notifications/cancel` over
 * stdio, a hang-up over HTTP).
 */
export type ConnectOptions =
  | {
      /** `http://host:port/rcp` */
      url: string;
      apiKey?: string;
      headers?: Record<string, string>;
      client?: { name: string; version: string };
      retry?: RetryPolicy | false;
    }
  | {
      /** The server command, spoken to over stdin/stdout (§5.1), e.g. ['rcp-server', 'serve', '--stdio']. */
      command: readonly string[];
      cwd?: string;
      env?: NodeJS.ProcessEnv;
      client?: { name: string; version: string };
      retry?: RetryPolicy | false;
    };

export interface CallOptions {
  signal?: AbortSignal;
  /** Client-side deadline; also sent as `_meta.deadlineMs` so the server stops in time (§13.1). */
  timeoutMs?: number;
  retry?: RetryPolicy | false;
}

export type StreamEvent =
  | { type: 'progress'; stage?: string; progress: number; message?: string; partial?: unknown }
  | { type: 'log'; level: string; message: string; data?: unknown }
  | { type: 'result'; result: Record<string, unknown> };

/** A §7.7 hit, as protocol/schemas/hit.ts declares it. */
export type { Hit } from '../protocol/schemas/hit.js';
/** Each method's params and result, derived from the protocol's one TypeBox declaration of them. */
export type {
  ContentBlock,
  EmbedMultiParams,
  EmbedParams,
  EmbedSparseParams,
  IndexAddParams,
  IndexDeleteParams,
  RerankParams,
  RetrieveParams,
  TextInput,
} from '../protocol/schemas/params.js';
export type { ResultOf } from '../protocol/schemas/results.js';

export async function connect(options: ConnectOptions): Promise<RcpClient> {
  const channel =
    'url' in options
      ? new HttpChannel(options.url.replace(/\/+$/, ''), {
          ...(options.headers ?? {}),
          ...(options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` }),
        })
      : new StdioChannel(options.command, { cwd: options.cwd, env: options.env });
  const client = new RcpClient(
    channel,
    options.retry === false ? { ...DEFAULT_RETRY, attempts: 1 } : (options.retry ?? DEFAULT_RETRY),
  );
  try {
    await client.initialize(options.client ?? { name: 'rcp-server-client', version: '1' });
  } catch (error) {
    await channel.close();
    throw error;
  }
  return client;
}

export class RcpClient {
  #info: Record<string, unknown> = {};
  private readonly requester: Requester;

  constructor(
    private readonly channel: Channel,
    private readonly retry: RetryPolicy,
  ) {
    this.requester = new Requester(channel);
  }

  /** What the server said at initialize: `protocolVersion`, `server`, `capabilities`. */
  get info(): Record<string, unknown> {
    return this.#info;
  }

  get capabilities(): Record<string, unknown> {
    return (this.#info.capabilities ?? {}) as Record<string, unknown>;
  }

  /** Notifications that belong to no request in flight (e.g. logs after it ended). */
  set onNotification(handler: (frame: Frame) => void) {
    this.channel.onStray = handler;
  }

  async initialize(client: { name: string; version: string }): Promise<void> {
    const result = await this.#call(
      'initialize',
      { protocolVersion: 1, client, capabilities: { streaming: {}, log: {} } },
      {},
    );
    // §7.1: a negotiated version below our minimum (1) means abort rather than speak a dialect we do not know.
    if (typeof result.protocolVersion !== 'number' || result.protocolVersion < 1) {
      throw new RpcError(
        RpcErrorCode.VersionMismatch,
        `the server negotiated an unsupported version ${String(result.protocolVersion)}`,
      );
    }
    this.#info = result;
  }

  /** Any method by name: capability-gated, retried per §12.2. */
  async request<T = Record<string, unknown>>(
    method: string,
    params: Record<string, unknown> = {},
    options: CallOptions = {},
  ): Promise<T> {
    this.#gate(method);
    const policy = options.retry === false ? { ...this.retry, attempts: 1 } : (options.retry ?? this.retry);
    return retrying(async () => (await this.#call(method, params, options)) as T, policy, { signal: options.signal });
  }

  /** A request's progress (and log) notifications, then its result, as an async iterator (§9; SSE over HTTP). */
  async *stream(
    method: string,
    params: Record<string, unknown> = {},
    options: CallOptions = {},
  ): AsyncGenerator<StreamEvent> {
    this.#gate(method);
    const queue: StreamEvent[] = [];
    let wake: (() => void) | undefined;
    let finished = false;
    let failure: Error | undefined;
    const push = (event: StreamEvent) => {
      queue.push(event);
      wake?.();
    };
    const onNotification = (frame: Frame) => {
      const p = (frame.params ?? {}) as Record<string, unknown>;
      if (frame.method === 'notifications/progress') {
        push({
          type: 'progress',
          progress: Number(p.progress),
          ...(typeof p.stage === 'string' ? { stage: p.stage } : {}),
          ...(typeof p.message === 'string' ? { message: p.message } : {}),
          ...(p.partial !== undefined ? { partial: p.partial } : {}),
        });
      } else if (frame.method === 'notifications/log') {
        push({ type: 'log', level: String(p.level), message: String(p.message), data: p.data });
      }
    };
    this.#call(method, params, options, onNotification)
      .then(
        (result) => push({ type: 'result', result }),
        (error: unknown) => (failure = error instanceof Error ? error : new Error(String(error))),
      )
      .finally(() => {
        finished = true;
        wake?.();
      });
    for (;;) {
      const next = queue.shift();
      if (next !== undefined) {
        yield next;
        if (next.type === 'result') return;
        continue;
      }
      if (finished) {
        if (failure !== undefined) throw failure;
        return;
      }
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  }

  /** §7.7; members beyond RetrieveParams (a vendor's, §4.6) are sent as they are. */
  retrieve(params: RetrieveParams & Record<string, unknown>, options?: CallOptions) {
    return this.request<ResultOf<'retrieve'>>('retrieve', params, options);
  }

  embed(params: EmbedParams, options?: CallOptions) {
    return this.request<ResultOf<'embed'>>('embed', params, options);
  }

  embedSparse(params: EmbedSparseParams, options?: CallOptions) {
    return this.request<ResultOf<'embed/sparse'>>('embed/sparse', params, options);
  }

  /** §7.5: one token matrix per input (JSON numbers only: methods/embed-multi.ts). */
  embedMulti(params: EmbedMultiParams, options?: CallOptions) {
    return this.request<ResultOf<'embed/multi'>>('embed/multi', params, options);
  }

  rerank(params: RerankParams, options?: CallOptions) {
    return this.request<ResultOf<'rerank'>>('rerank', params, options);
  }

  indexAdd(params: IndexAddParams, options?: CallOptions) {
    return this.request<ResultOf<'index/add'>>('index/add', params, options);
  }

  indexDelete(params: IndexDeleteParams, options?: CallOptions) {
    return this.request<ResultOf<'index/delete'>>('index/delete', params, options);
  }

  catalogList(options?: CallOptions) {
    return this.request<ResultOf<'catalog/list'>>('catalog/list', {}, options);
  }

  ping(options?: CallOptions) {
    return this.request<ResultOf<'ping'>>('ping', {}, options);
  }

  /** Ends the connection: stdio closes stdin (the server drains and exits); HTTP has nothing to close. */
  close(): Promise<void> {
    return this.channel.close();
  }

  /** §6: a method whose capability was not advertised fails here, before any I/O, with -32003. */
  #gate(method: string): void {
    if (isCoreMethod(method) && METHODS[method].capability === null) return;
    const capability = capabilityFor(method);
    if (capability === undefined || !(capability in this.capabilities)) {
      throw new RpcError(RpcErrorCode.CapabilityMissing, 'capability not advertised', {
        retryable: false,
        detail: `'${method}' needs capability '${capability ?? method}', which the server did not advertise`,
      });
    }
  }

  async #call(
    method: string,
    params: Record<string, unknown>,
    options: CallOptions,
    onNotification?: (frame: Frame) => void,
  ): Promise<Record<string, unknown>> {
    // §13.1: the client's deadline goes with the request, so the server stops in time.
    const meta = {
      ...((params._meta ?? {}) as Record<string, unknown>),
      ...(options.timeoutMs === undefined ? {} : { deadlineMs: options.timeoutMs }),
    };
    const sent = { ...params, ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}) };
    return this.requester.call(method, sent, { signal: options.signal, timeoutMs: options.timeoutMs, onNotification });
  }
}
