import { randomUUID } from 'node:crypto';
import { RpcErrorCode } from '../protocol/codes.js';
import { RpcError } from '../protocol/errors.js';
import { orAfter } from '../protocol/or-after.js';
import { isJsonObject, type JsonObject } from '../protocol/messages.js';
import type { EngineSpec } from './engine.js';
import type { EngineState, FailFastEngine } from './fail-fast.js';
import type { EngineCallOptions, EngineInfo, RemoteEngine } from './remote-engine.js';

/**
 * One engine of a federation that several replicas serve (§16; docs/replicas.md, "Partitions"): the registry entry's
 * `urls`, each a replica of one corpus (a partition, over a PostgreSQL store of its own). To the federation it is one
 * engine: one list in a retrieve's fusion, one shard for writes. Calls go to the members in turn, so reads spread over
 * them; a member that cannot serve (-32010: a dead link, a replica not caught up, or one marked down by its fail-fast)
 * passes the call to the next within what is left of its deadline. A read gives each member its share of that, and
 * passes on a timeout too. A write gives the first member all of it, never passes on a timeout (no time is left), and
 * carries an idempotency key, so that one passed on after a link died under it is applied once (keyed()). Any other
 * answer is the group's.
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
    const write = WRITES.has(method);
    const sent = write ? keyed(params) : params;
    let last: RpcError | undefined;
    for (let i = 0; i < this.members.length; i++) {
      const left = options.deadlineMs - (Date.now() - started);
      if (left < 1) break;
      // A read gets its share of what is left, so that one member that never answers costs only that share.
      const budget = write ? left : Math.max(Math.min(left, MIN_SHARE_MS), left / (this.members.length - i));
      const member = this.members[(first + i) % this.members.length]!;
      try {
        const answer = member.call(method, withDeadline(sent, budget), { ...options, deadlineMs: budget });
        return await within(answer, budget);
      } catch (error) {
        if (!passesOn(error, write)) throw error;
        last = error as RpcError;
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

/**
 * A member's answer within the time it was given, or -32014: a member may hold a call longer (one waiting on a
 * start-up `initialize` given the gateway's connect timeout), and neither the caller nor the next member waits for it.
 */
function within(answer: Promise<JsonObject>, ms: number): Promise<JsonObject> {
  answer.catch(() => undefined); // a late failure of a call given up on is no one's
  return orAfter(answer, ms, (): never => {
    throw RpcError.timeout(Math.round(ms));
  });
}

/** Calls that change the corpus: one whose answer did not come may have been applied, and is not sent again. */
const WRITES = new Set(['index/add', 'index/delete']);

/** The least share of a read's deadline a member gets (unless less is left). */
const MIN_SHARE_MS = 250;

/**
 * Whether a member's failure passes the call to the next: -32010 (it cannot serve: a dead link, not caught up, marked
 * down) always; a read's timeout too (it had only its share); a write's timeout never.
 */
function passesOn(error: unknown, write: boolean): boolean {
  if (!(error instanceof RpcError)) return false;
  return error.code === RpcErrorCode.BackendUnavailable || (!write && error.code === RpcErrorCode.Timeout);
}

/**
 * A write with an idempotency key (§7.10): the client's, or one of the group's. The members share one store of
 * record, which answers a key it has seen with its first answer: a write passed to the next member after a link died
 * under it is applied once, whether or not the first member applied it.
 */
function keyed(params: JsonObject): JsonObject {
  const meta = isJsonObject(params._meta) ? params._meta : {};
  if (typeof meta.idempotencyKey === 'string') return params;
  return { ...params, _meta: { ...meta, idempotencyKey: `replica-group-${randomUUID()}` } };
}

/** §16.2: a call passed to the next member carries what is left of the deadline, not what the first was given. */
function withDeadline(params: JsonObject, leftMs: number): JsonObject {
  const meta = params._meta;
  if (!isJsonObject(meta) || typeof meta.deadlineMs !== 'number') return params;
  return { ...params, _meta: { ...meta, deadlineMs: Math.max(1, Math.min(meta.deadlineMs, Math.floor(leftMs))) } };
}
