import { RpcError } from '../protocol/errors.js';

/** The gateway's port to a downstream engine (§16): src/gateway/engine.ts implements it over the typed client. */

/** What an engine said about itself at initialize (§7.1), cached per connection (§13.2). */
export interface EngineInfo {
  readonly server: Readonly<Record<string, unknown>>;
  readonly capabilities: Readonly<Record<string, unknown>>;
}

export interface EngineCallOptions {
  /** Milliseconds this call may take, retries included. */
  readonly deadlineMs: number;
  readonly signal?: AbortSignal | undefined;
  /** Attempts for a retryable failure (§12.2); 1 means no retry. */
  readonly attempts?: number;
}

/**
 * A downstream RCP engine of a federation (§16): its registry entry, what it advertised, and calls that resolve with
 * its result or reject with an RpcError (its own, or -32010/-32014 when no answer came in time).
 */
export interface RemoteEngine {
  readonly id: string;
  readonly weight: number;
  readonly required: boolean;
  readonly priority: number;
  /** Where a client may reach it directly (HTTP engines only; §7.13 `endpoint`). */
  readonly endpoint: { transport: 'http'; url: string } | undefined;
  readonly info: EngineInfo | undefined;
  connect(deadlineMs: number, signal?: AbortSignal): Promise<EngineInfo>;
  call(method: string, params: Record<string, unknown>, options: EngineCallOptions): Promise<Record<string, unknown>>;
  /** §7.15 liveness: whether it answers `ping` within `timeoutMs`. */
  alive(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * A failure that is no answer of the engine's: its link timed out (-32014) or died, or what came back was not an
 * answer (-32010). The engine's own errors are plain RpcErrors; only these say nothing of what it did.
 */
export class UnansweredError extends RpcError {}
