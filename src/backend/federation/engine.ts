import { retriesAutomatically, RpcErrorCode } from '../../protocol/codes.js';
import { RpcError } from '../../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../../protocol/messages.js';
import type { Logger } from '../../protocol/logger.js';
import type { EngineCallOptions, EngineInfo, RemoteEngine } from '../ports.js';
import { HttpLink } from './http-link.js';
import { LinkError, type Link } from './link.js';
import { StdioLink } from './stdio-link.js';

/** One entry of the §16.1 registry. */
export interface EngineSpec {
  readonly id: string;
  readonly transport: 'stdio' | 'http';
  readonly command?: readonly string[] | undefined;
  readonly url?: string | undefined;
  readonly weight: number;
  readonly required: boolean;
  readonly priority: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Extra environment for a stdio engine (the gateway's own RCP_* settings are never passed down). */
  readonly env?: Readonly<Record<string, string>>;
}

const KNOWN_CODES = new Set<number>(Object.values(RpcErrorCode));

/**
 * A downstream RCP engine as the gateway uses it: one link, initialized once per connection with its capabilities
 * cached, calls answered with the engine's result or rejected with an RpcError — the engine's own (code, message,
 * data), or -32010 when no answer came (transport death, an unreadable answer) and -32014 when the deadline passed.
 * Retries follow §12.2 (`retriesAutomatically`: -32010/-32011/-32014 unless the engine's `data.retryable` says
 * otherwise, -32603 once, never -32006 or -32001), honouring `retryAfterMs`, exponential backoff with full jitter,
 * within the deadline.
 */
export class Engine implements RemoteEngine {
  readonly #link: Link;
  #info: EngineInfo | undefined;
  #initializedGeneration = -1;
  #initializing: Promise<EngineInfo> | undefined;

  constructor(
    readonly spec: EngineSpec,
    private readonly client: { name: string; version: string },
    private readonly log: Logger,
    link?: Link,
  ) {
    this.#link = link ?? openLink(spec, log);
  }

  get id(): string {
    return this.spec.id;
  }

  get weight(): number {
    return this.spec.weight;
  }

  get required(): boolean {
    return this.spec.required;
  }

  get priority(): number {
    return this.spec.priority;
  }

  get endpoint(): { transport: 'http'; url: string } | undefined {
    return this.spec.transport === 'http' && this.spec.url !== undefined
      ? { transport: 'http', url: this.spec.url }
      : undefined;
  }

  /** The engine's identity and capabilities, when it has been reached. */
  get info(): EngineInfo | undefined {
    return this.#info;
  }

  /** Connects (initializes) if this connection has not been, and returns what the engine advertised. */
  async connect(deadlineMs: number, signal?: AbortSignal): Promise<EngineInfo> {
    if (this.#info !== undefined && this.#initializedGeneration === this.#link.generation) return this.#info;
    this.#initializing ??= this.#initialize(deadlineMs, signal).finally(() => (this.#initializing = undefined));
    return this.#initializing;
  }

  async call(method: string, params: JsonObject, options: EngineCallOptions): Promise<JsonObject> {
    const started = Date.now();
    const attempts = options.attempts ?? 3;
    let internalRetried = false;
    let reconnected = false;
    for (let attempt = 1; ; attempt++) {
      const left = options.deadlineMs - (Date.now() - started);
      if (left <= 0) throw RpcError.timeout(options.deadlineMs);
      try {
        await this.connect(left, options.signal);
        return await this.#once(method, params, options.deadlineMs - (Date.now() - started), options.signal);
      } catch (error) {
        const failure = RpcError.from(error);
        // -32001: the engine lost our session (it restarted); `connect` opens a new one, and the call is sent again
        // at once, whatever the attempts allowed: it never ran.
        if (failure.code === RpcErrorCode.NotInitialized && options.signal?.aborted !== true) {
          if (reconnected) throw this.#sessionless();
          reconnected = true;
          attempt--;
          continue;
        }
        // §12.2, and -32603 once.
        const retryable =
          retriesAutomatically(failure.code, failure.data) &&
          (failure.code !== RpcErrorCode.InternalError || (!internalRetried && (internalRetried = true)));
        if (options.signal?.aborted === true || !retryable || attempt >= attempts) throw failure;
        const hinted = Number((failure.data as { retryAfterMs?: unknown }).retryAfterMs);
        const backoff = Math.random() * Math.min(2000, 100 * 2 ** (attempt - 1));
        const wait = Math.max(Number.isFinite(hinted) ? hinted : 0, backoff);
        if (Date.now() - started + wait >= options.deadlineMs) throw failure;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /**
   * §7.15: whether the engine answers `ping` within `timeoutMs`. An engine that restarted answers our old session
   * -32001: it is initialized again, and alive if it then answers.
   */
  async alive(timeoutMs: number): Promise<boolean> {
    const started = Date.now();
    const ping = async (): Promise<boolean> => (await this.#once('ping', {}, timeoutMs - (Date.now() - started)), true);
    try {
      return await ping();
    } catch (error) {
      if (!(error instanceof RpcError && error.code === RpcErrorCode.NotInitialized)) return false;
      // A new session, then a ping in it: an engine that cannot keep a session is not one to send calls to.
      return this.connect(timeoutMs - (Date.now() - started))
        .then(ping, () => false)
        .catch(() => false);
    }
  }

  /** -32001 again right after a new session: to the caller, this engine is unavailable (§12.2: -32010). */
  #sessionless(): RpcError {
    return RpcError.backendUnavailable(`engine ${this.id} answers -32001 in a session it has just opened`, 1000);
  }

  close(): Promise<void> {
    return this.#link.close();
  }

  async #initialize(deadlineMs: number, signal?: AbortSignal): Promise<EngineInfo> {
    const generation = this.#link.generation;
    const result = await this.#once(
      'initialize',
      { protocolVersion: 1, client: this.client, capabilities: {} },
      deadlineMs,
      signal,
    );
    const info = { server: asObject(result.server), capabilities: asObject(result.capabilities) };
    this.#info = info;
    this.#initializedGeneration = generation;
    this.log.info({ engine: this.id, server: info.server }, 'engine initialized');
    return info;
  }

  async #once(method: string, params: JsonObject, timeoutMs: number, signal?: AbortSignal): Promise<JsonObject> {
    let frame;
    try {
      frame = await this.#link.request(method, params, Math.max(1, timeoutMs), signal);
    } catch (error) {
      if (!(error instanceof LinkError)) throw error;
      if (error.kind === 'timeout') throw new RpcError(RpcErrorCode.Timeout, `timeout`, { detail: error.message });
      if (error.kind === 'cancelled') throw RpcError.cancelled(error.message);
      throw RpcError.backendUnavailable(error.message, 250);
    }
    if (frame.error !== undefined) {
      const { code, message, data } = frame.error;
      // -32001 after an engine restart we did not see: initialize again on the next attempt.
      if (code === -32001) this.#initializedGeneration = -1;
      if (!KNOWN_CODES.has(code)) {
        throw RpcError.backendUnavailable(`engine ${this.id} answered an unknown error code ${code}: ${message}`, 1000);
      }
      throw new RpcError(code as RpcErrorCode, message, data ?? {});
    }
    return frame.result ?? {};
  }
}

function asObject(value: unknown): JsonObject {
  return isJsonObject(value) ? value : {};
}

function openLink(spec: EngineSpec, log: Logger): Link {
  if (spec.transport === 'stdio') {
    if (spec.command === undefined || spec.command.length === 0)
      throw new Error(`engine ${spec.id}: stdio needs a command`);
    return new StdioLink(spec.id, spec.command, log, spec.env ?? {});
  }
  if (spec.url === undefined) throw new Error(`engine ${spec.id}: http needs a url`);
  return new HttpLink(spec.id, spec.url, spec.headers);
}
