import type { RemoteEngine } from './remote-engine.js';
import { RpcError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/messages.js';
import type { FederatedFusion } from './federated-fusion.js';
import { scopedForCaller } from './forwarding.js';

/**
 * §16.2 the gateway's side of a hop: where a query has been (`_meta.federation {depth, path}`), which engines it may
 * still go to, how long they get, and what each is sent. Every function here is pure.
 */
export interface FederationSettings {
  /** This gateway's identity on `_meta.federation.path` (and its `server.name`). */
  readonly id: string;
  /** The hop budget a query starts with when the client sent none (§16.2 RECOMMENDED 3). */
  readonly depth: number;
  readonly fusion: { readonly method: FederatedFusion; readonly rrfK: number };
  /** Time kept back from the downstream deadline for fusion (at least this, at least 10%). */
  readonly fusionReserveMs: number;
  /** Attempts per engine call for retryable failures (§12.2). */
  readonly attempts: number;
}

export interface Federation {
  readonly depth: number;
  readonly path: readonly string[];
}

/** The request's `_meta.federation`, or a fresh one with the gateway's hop budget (§16.2 RECOMMENDED 3). */
export function federationOf(meta: JsonObject, defaultDepth: number): Federation {
  const given = isJsonObject(meta.federation) ? meta.federation : {};
  const depth = typeof given.depth === 'number' && Number.isInteger(given.depth) ? given.depth : defaultDepth;
  const path = Array.isArray(given.path) ? given.path.filter((hop): hop is string => typeof hop === 'string') : [];
  return { depth, path };
}

/**
 * §16.2 loop detection at the gateway itself: never forward when this gateway is already on the path, nor at depth
 * 0. The note that says why it stopped, or undefined when the query may go on.
 */
export function loopStop(federation: Federation, gateway: string): string | undefined {
  if (federation.path.includes(gateway)) {
    return `cycle: gateway ${gateway} is already on the path ${JSON.stringify(federation.path)}`;
  }
  if (federation.depth <= 0) return `hop budget exhausted at gateway ${gateway}, which has no index of its own`;
  return undefined;
}

const nameOf = (engine: RemoteEngine): string | undefined => {
  const name = engine.info?.server.name;
  return typeof name === 'string' ? name : undefined;
};

/** §16.2: the engines not already on the path (by registry id or server name), and a note for each one skipped. */
export function offPath(
  engines: readonly RemoteEngine[],
  federation: Federation,
): { targets: RemoteEngine[]; notes: string[] } {
  const targets: RemoteEngine[] = [];
  const notes: string[] = [];
  for (const engine of engines) {
    const onPath = federation.path.includes(engine.id) || federation.path.includes(nameOf(engine) ?? '\u0000');
    if (onPath) notes.push(`cycle: engine ${engine.id} is already on the path; skipped`);
    else targets.push(engine);
  }
  return { targets, notes };
}

/**
 * §16.2 budget: the deadline forwarded to every engine, strictly smaller than what is left, keeping a reserve for
 * fusion (at least `reserveMs`, at least 10%). Nothing left for the engines is -32014 now.
 */
export function engineBudget(leftMs: number, reserveMs: number): number {
  const reserve = Math.max(reserveMs, leftMs * 0.1);
  const budget = Math.floor(leftMs - reserve);
  if (budget <= 0) throw RpcError.timeout(Math.round(leftMs));
  return budget;
}

/**
 * §16.2 headroom: shards re-fused globally get 2k each, since a shard's own normalisation may rank a global top-k
 * document a little lower; the rank-based strategies gain nothing from more.
 */
export function askedK(method: FederatedFusion, k: number): number {
  return method === 'shards' ? k * 2 : k;
}

/** What one engine is asked for: at most `asked`, clamped to its advertised `maxK`. */
export function engineK(engine: RemoteEngine, asked: number): number {
  const retrieve = engine.info?.capabilities.retrieve;
  const maxK = isJsonObject(retrieve) ? retrieve.maxK : undefined;
  return typeof maxK === 'number' ? Math.min(asked, maxK) : asked;
}

/** One forwarded hop: where it goes from here and how long it has. */
export interface Hop {
  readonly gateway: string;
  readonly federation: Federation;
  readonly budget: number;
  readonly caller: string;
}

/**
 * The `retrieve` params one engine is sent (§16.2): the client's, with `k` for that engine, the client's `_meta`
 * less its `progressToken` (progress is the gateway's to report), the forwarded deadline, one hop less and this
 * gateway on the path; scoped by the caller (§15.6).
 */
export function forwardedRetrieve(params: JsonObject, meta: JsonObject, k: number, hop: Hop): JsonObject {
  const { progressToken: _progress, ...kept } = meta;
  void _progress;
  const call: JsonObject = {
    ...params,
    k,
    _meta: {
      ...kept,
      deadlineMs: hop.budget,
      federation: { depth: hop.federation.depth - 1, path: [...hop.federation.path, hop.gateway] },
    },
  };
  return scopedForCaller(call, hop.caller);
}
