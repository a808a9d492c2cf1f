import { RpcErrorCode } from '../protocol/codes.js';
import { RpcError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/messages.js';
import type { EngineSpec } from './engine.js';
import type { EngineState, FailFastEngine } from './fail-fast.js';
import type { EngineCallOptions, EngineInfo, RemoteEngine } from './remote-engine.js';

/**
 * One engine of a federation that several replicas serve (§16; docs/replicas.md, "Partitions"): the registry entry's
 * `urls`, each a replica of one corpus (a partition, over a PostgreSQL store of its own). To the federation it is one
 * engine: one list in a retrieve's fusion, one shard for writes. Calls go to the members in turn, so reads spread over
 * them; a member that cannot serve (-32010: a dead link, a replica not caught up, or one marked down by its fail-fast)
 * passes the call to the next within what is left of its deadline. Any other answer, a timeout included, is the
 * group's: a write whose answer did not come in time may have been applied, and is not sent twice.
 */
export class ReplicaGroup implements RemoteEngine {
  #next = 0;

  constructor(
    private readonly spec: EngineSpec,
    private readonly members: readonly FailFastEngine[],
  ) {}

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
  get endpoint(): RemoteEngine['endpoint'] {
    return this.members[0]?.endpoint;
  }
  /** What the first member reached advertised: the replicas of one corpus advertise alike. */
  get info(): EngineInfo | undefined {
    return this.members.find((member) => member.info !== undefined)?.info;
  }
  /** Each member's fail-fast state, for readiness and metrics. */
  get states(): EngineState[] {
    return this.members.map((member) => member.state);
  }

  /** Connects every member; resolves with the first that answers, rejects only when none does. */
  async connect(deadlineMs: number, signal?: AbortSignal): Promise<EngineInfo> {
    return Promise.any(this.members.map((member) => member.connect(deadlineMs, signal))).catch(
      (error: AggregateError) => Promise.reject(error.errors[0] as Error),
    );
  }

  async call(method: string, params: JsonObject, options: EngineCallOptions): Promise<JsonObject> {
    const started = Date.now();
    const first = this.#next;
    this.#next = (this.#next + 1) % this.members.length;
    let last: RpcError | undefined;
    for (let i = 0; i < this.members.length; i++) {
      const left = options.deadlineMs - (Date.now() - started);
      if (left < 1) break;
      const member = this.members[(first + i) % this.members.length]!;
      try {
        return await member.call(method, withDeadline(params, left), { ...options, deadlineMs: left });
      } catch (error) {
        if (!(error instanceof RpcError) || error.code !== RpcErrorCode.BackendUnavailable) throw error;
        last = error;
      }
    }
    throw last ?? RpcError.timeout(options.deadlineMs);
  }

  /** §7.15: alive while any member answers `ping`. */
  async alive(timeoutMs: number): Promise<boolean> {
    return (await Promise.all(this.members.map((member) => member.alive(timeoutMs)))).some(Boolean);
  }

  async close(): Promise<void> {
    await Promise.all(this.members.map((member) => member.close()));
  }
}

/** §16.2: a call passed to the next member carries what is left of the deadline, not what the first was given. */
function withDeadline(params: JsonObject, leftMs: number): JsonObject {
  const meta = params._meta;
  if (!isJsonObject(meta) || typeof meta.deadlineMs !== 'number') return params;
  return { ...params, _meta: { ...meta, deadlineMs: Math.max(1, Math.min(meta.deadlineMs, Math.floor(leftMs))) } };
}
