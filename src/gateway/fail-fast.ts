import { RpcErrorCode } from '../protocol/codes.js';
import { RpcError } from '../protocol/errors.js';
import type { Logger } from '../protocol/logger.js';
import type { JsonObject } from '../protocol/messages.js';
import { UnansweredError, type EngineCallOptions, type EngineInfo, type RemoteEngine } from './remote-engine.js';

/** When an engine is marked down, and for how long (docs/federation.md). */
export interface FailFastSettings {
  /** Calls in a row that got no answer (UnansweredError) before the engine is marked down. */
  readonly downAfter: number;
  /** The first back-off; it doubles each time a probe fails, up to MAX_DOWN_MS. */
  readonly downForMs: number;
}

/** The longest back-off: a hung engine is probed at least this often. */
const MAX_DOWN_MS = 60_000;

/** What an engine's fail-fast state is, for readiness and metrics. */
export interface EngineState {
  readonly engine: string;
  readonly down: boolean;
  /** Times it has been marked down since start. */
  readonly markedDown: number;
}

/**
 * An engine behind fail-fast (§16.2 partial failure: the others answer): after `downAfter` calls in a row that got no
 * answer (UnansweredError: its link timed out or died; the engine's own errors are answers) — it is marked down for a back-off, and every call to it is
 * -32010 at once (with `retryAfterMs`) rather than waiting out each request's deadline on an engine that accepts
 * connections and never answers. After the back-off, one call goes through as the probe: an answer of any kind
 * (a result or the engine's own error) brings it back; none marks it down again for twice as long. Logged each way.
 */
export class FailFastEngine implements RemoteEngine {
  #failures = 0;
  #downUntil: number | undefined;
  #downForMs: number;
  #probing = false;
  #markedDown = 0;

  constructor(
    private readonly engine: RemoteEngine,
    private readonly settings: FailFastSettings,
    private readonly log: Logger,
  ) {
    this.#downForMs = settings.downForMs;
  }

  get id(): string {
    return this.engine.id;
  }
  get weight(): number {
    return this.engine.weight;
  }
  get required(): boolean {
    return this.engine.required;
  }
  get priority(): number {
    return this.engine.priority;
  }
  get endpoint(): RemoteEngine['endpoint'] {
    return this.engine.endpoint;
  }
  get info(): EngineInfo | undefined {
    return this.engine.info;
  }

  get state(): EngineState {
    return { engine: this.id, down: this.#downUntil !== undefined, markedDown: this.#markedDown };
  }

  connect(deadlineMs: number, signal?: AbortSignal): Promise<EngineInfo> {
    return this.engine.connect(deadlineMs, signal);
  }

  alive(timeoutMs: number): Promise<boolean> {
    return this.engine.alive(timeoutMs);
  }

  close(): Promise<void> {
    return this.engine.close();
  }

  async call(method: string, params: JsonObject, options: EngineCallOptions): Promise<JsonObject> {
    const probe = this.#admit();
    try {
      const result = await this.engine.call(method, params, options);
      this.#answered(probe);
      return result;
    } catch (error) {
      if (error instanceof UnansweredError) this.#unanswered(probe, error);
      else if (!(error instanceof RpcError && error.code === RpcErrorCode.Cancelled)) this.#answered(probe);
      else if (probe) this.#probing = false;
      throw error;
    }
  }

  /** Whether this call may go: true when it is the probe of an engine marked down; -32010 at once otherwise. */
  #admit(): boolean {
    if (this.#downUntil === undefined) return false;
    const waitMs = this.#downUntil - Date.now();
    if (waitMs > 0 || this.#probing) {
      const detail = `engine ${this.id} is marked down after ${this.settings.downAfter} calls in a row without an answer`;
      throw RpcError.backendUnavailable(
        `${detail}; probed again in ${Math.max(0, Math.ceil(waitMs))} ms`,
        this.#retryAfter(waitMs),
      );
    }
    this.#probing = true;
    return true;
  }

  #retryAfter(waitMs: number): number {
    return Math.max(1, Math.ceil(waitMs > 0 ? waitMs : this.#downForMs));
  }

  #answered(probe: boolean): void {
    this.#failures = 0;
    if (probe) this.#probing = false;
    if (this.#downUntil === undefined) return;
    this.#downUntil = undefined;
    this.#downForMs = this.settings.downForMs;
    this.log.info({ engine: this.id }, 'engine answered its probe; marked up');
  }

  #unanswered(probe: boolean, error: RpcError): void {
    if (probe) {
      this.#probing = false;
      this.#downForMs = Math.min(this.#downForMs * 2, MAX_DOWN_MS);
      this.#markDown(`its probe got no answer (${error.message})`);
      return;
    }
    this.#failures += 1;
    if (this.#downUntil === undefined && this.#failures >= this.settings.downAfter) {
      this.#markDown(`${this.#failures} calls in a row got no answer (the last: ${error.message})`);
    }
  }

  #markDown(reason: string): void {
    this.#downUntil = Date.now() + this.#downForMs;
    this.#markedDown += 1;
    this.log.warn({ engine: this.id, reason, downForMs: this.#downForMs }, 'engine marked down; failing fast');
  }
}
