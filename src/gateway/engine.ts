import { RpcErrorCode } from '../protocol/codes.js';
import { RpcError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/messages.js';
import type { Logger } from '../protocol/logger.js';
import { UnansweredError, type EngineCallOptions, type EngineInfo, type RemoteEngine } from './remote-engine.js';
import { HttpChannel, StdioChannel, type Channel } from '../client/channel.js';
import { Requester } from '../client/requester.js';
import { stage } from '../protocol/tracing.js';
import {
  ClientTimeoutError,
  ConnectionClosedError,
  HttpStatusError,
  UnreadableFrameError,
} from '../client/client-errors.js';
import { DEFAULT_RETRY, retrying } from '../client/retry.js';

/** One entry of the §16.1 registry. */
export interface EngineSpec {
  readonly id: string;
  readonly transport: 'stdio' | 'http';
  readonly command?: readonly string[] | undefined;
  readonly url?: string | undefined;
  /** Replicas of one corpus behind one engine (replica-group.ts), in place of `url`. */
  readonly urls?: readonly string[] | undefined;
  readonly weight: number;
  readonly required: boolean;
  readonly priority: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Extra environment for a stdio engine (the gateway's own RCP_* settings are never passed down). */
  readonly env?: Readonly<Record<string, string>>;
}

const KNOWN_CODES = new Set<number>(Object.values(RpcErrorCode));

/** A stdio engine's restarts (§16): 250 ms doubling to 10 s, back to 250 ms after a minute of health. */
const RESTART = { firstMs: 250, maxMs: 10_000, healthyMs: 60_000 };

/**
 * A downstream RCP engine as the gateway uses it: one channel of the typed client (a supervised stdio child, or HTTP
 * with a session of its own), initialized once per connection with its capabilities cached, calls answered with the
 * engine's result or rejected with an RpcError — the engine's own (code, message, data), or -32010 when no answer
 * came (transport death, an unreadable answer) and -32014 when the deadline passed. Retries are the client's §12.2
 * loop and policy (`retrying`, DEFAULT_RETRY with the call's attempts), within the deadline.
 */
export class Engine implements RemoteEngine {
  readonly #channel: Channel;
  readonly #requester: Requester;
  #info: EngineInfo | undefined;
  #initializedGeneration = -1;
  #initializing: Promise<EngineInfo> | undefined;

  constructor(
    readonly spec: EngineSpec,
    private readonly client: { name: string; version: string },
    private readonly log: Logger,
    channel?: Channel,
  ) {
    this.#channel = channel ?? openChannel(spec, log);
    this.#requester = new Requester(this.#channel);
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
    if (this.#info !== undefined && this.#initializedGeneration === this.#generation) return this.#info;
    this.#initializing ??= this.#initialize(deadlineMs, signal).finally(() => (this.#initializing = undefined));
    return this.#initializing;
  }

  async call(method: string, params: JsonObject, options: EngineCallOptions): Promise<JsonObject> {
    const started = Date.now();
    let reconnected = false;
    const attempt = async (): Promise<JsonObject> => {
      for (;;) {
        const left = options.deadlineMs - (Date.now() - started);
        if (left <= 0) throw RpcError.timeout(options.deadlineMs);
        try {
          await this.connect(left, options.signal);
          return await this.#once(method, params, options.deadlineMs - (Date.now() - started), options.signal);
        } catch (error) {
          // -32001: the engine lost our session (it restarted); `connect` opens a new one, and the call is sent again
          // at once, whatever the attempts allowed: it never ran.
          const lost = error instanceof RpcError && error.code === RpcErrorCode.NotInitialized;
          if (!lost || options.signal?.aborted === true) throw error;
          if (reconnected) throw this.#sessionless();
          reconnected = true;
        }
      }
    };
    const policy = { ...DEFAULT_RETRY, attempts: options.attempts ?? DEFAULT_RETRY.attempts };
    try {
      return await retrying(attempt, policy, { signal: options.signal, budgetMs: options.deadlineMs });
    } catch (error) {
      throw this.#failure(error, options.signal);
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
    return this.#channel.close();
  }

  async #initialize(deadlineMs: number, signal?: AbortSignal): Promise<EngineInfo> {
    const generation = this.#generation;
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

  /** One request through the client's requester; the engine's error answers checked against the §12 table. */
  async #once(method: string, params: JsonObject, timeoutMs: number, signal?: AbortSignal): Promise<JsonObject> {
    try {
      // §16: a hop to an engine is a span of the request it serves, and its trace goes on to the engine (§17.2).
      return await stage('gateway.engine', { 'rcp.engine': this.id, 'rpc.method': method }, () =>
        this.#requester.call(method, params, { timeoutMs: Math.max(1, timeoutMs), signal }),
      );
    } catch (error) {
      throw this.#answered(error, signal) ?? this.#failure(error, signal);
    }
  }

  /** The engine's own error answer (not a cancel of ours) as the gateway passes it on; undefined for anything else. */
  #answered(error: unknown, signal: AbortSignal | undefined): RpcError | undefined {
    if (!(error instanceof RpcError) || (error.code === RpcErrorCode.Cancelled && signal?.aborted === true)) {
      return undefined;
    }
    // -32001 after an engine restart we did not see: initialize again on the next attempt.
    if (error.code === RpcErrorCode.NotInitialized) this.#initializedGeneration = -1;
    if (!KNOWN_CODES.has(error.code)) {
      const text = `engine ${this.id} answered an unknown error code ${String(error.code)}: ${error.message}`;
      return RpcError.backendUnavailable(text, 1000);
    }
    return error;
  }

  /** Connections the channel has made: a stdio engine restarted is a new process that must be initialized again. */
  get #generation(): number {
    return this.#channel.generation ?? 1;
  }

  /**
   * The one place a failure on the client side becomes the gateway's RpcError (§12): no answer in time is -32014, a
   * cancel of ours (`signal` aborted) -32006, and a connection that died or an answer that is not JSON-RPC -32010
   * (retryable). The engine's own error answers pass as they are.
   */
  #failure(error: unknown, signal: AbortSignal | undefined): unknown {
    if (error instanceof ClientTimeoutError) {
      return new UnansweredError(RpcErrorCode.Timeout, 'timeout', {
        detail: `engine ${this.id}: no answer in ${error.timeoutMs} ms`,
      });
    }
    if (error instanceof RpcError && error.code === RpcErrorCode.Cancelled && signal?.aborted === true) {
      return RpcError.cancelled(`engine ${this.id}: request cancelled`);
    }
    const unanswered = [ConnectionClosedError, HttpStatusError, UnreadableFrameError];
    if (unanswered.some((type) => error instanceof type)) {
      const detail = `engine ${this.id}: ${(error as Error).message}`;
      return new UnansweredError(RpcErrorCode.BackendUnavailable, 'backend unavailable', { detail, retryAfterMs: 250 });
    }
    return error;
  }
}

function asObject(value: unknown): JsonObject {
  return isJsonObject(value) ? value : {};
}

/** The typed client's channel to an engine: a supervised stdio child, or HTTP with the registry's headers. */
function openChannel(spec: EngineSpec, log: Logger): Channel {
  if (spec.transport === 'http') {
    if (spec.url === undefined) throw new Error(`engine ${spec.id}: http needs a url`);
    // Credentials belong in the registry's headers, never in params (§15.6).
    return new HttpChannel(spec.url.replace(/\/+$/, ''), spec.headers);
  }
  if (spec.command === undefined || spec.command.length === 0)
    throw new Error(`engine ${spec.id}: stdio needs a command`);
  // The gateway's RCP_* variables configure the gateway, not its engines (a data dir or port must not leak down).
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RCP_')));
  const engine = spec.id;
  return new StdioChannel(spec.command, {
    env: { ...inherited, ...spec.env },
    supervise: {
      ...RESTART,
      onExit: (exit) => log.warn({ engine, ...exit }, 'engine exited; restarting'),
      onSpawnError: (err) => log.warn({ engine, err }, 'engine could not be started'),
    },
    onUnreadable: (line) => log.warn({ engine, line: line.slice(0, 200) }, 'engine wrote a line that is not JSON'),
  });
}
