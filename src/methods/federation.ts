import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { RemoteEngine } from '../backend/ports.js';
import type { RequestContext } from '../protocol/context.js';
import { RpcError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/messages.js';
import type { MethodDefinition, MethodRegistry } from '../protocol/registry.js';
import { fuseEngines, type FederatedFusion } from '../retrieval/federated-fusion.js';
import { firstAnswer } from './failover.js';
import { scopedForCaller } from './forwarding.js';

/**
 * The gateway's methods (§16): it is an RCP server to its clients and an RCP client to its engines.
 * - `retrieve`: fan-out to every engine advertising retrieve, concurrently, each asked for `k`, under a deadline that
 *   leaves a fusion reserve; loop detection by `_meta.federation {depth, path}`; partial failure noted in
 *   `usage.notes` and `_meta.degraded`; a required engine's failure fails the query with its code; all failing is
 *   -32010; fusion per §16.3.
 * - `catalog/list` (§7.13): the engines, their identities and capabilities, and an endpoint for HTTP ones.
 * - `embed`, `rerank`: routed to the highest-priority engine that advertises them, failing over on -32010.
 * - `index/add`, `index/delete`: each document to one shard (the writable leaf engines reached at start) by a
 *   stable hash of its id.
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

const RetrieveParams = Type.Object({ query: Type.Unknown(), k: Type.Integer({ minimum: 1 }) });
const AnyParams = Type.Object({});
const IndexAddParams = Type.Object({
  documents: Type.Array(Type.Object({ id: Type.Optional(Type.String()), text: Type.String() }), { minItems: 1 }),
});
const IndexDeleteParams = Type.Object({ ids: Type.Array(Type.String()) });

/** Feature capabilities passed through from the engines (union, §16.4): retrieve options the engines honour. */
const PASSED_THROUGH = ['filter', 'citations'] as const;

interface Federation {
  depth: number;
  path: string[];
}

/** Registers the gateway's methods, with capabilities derived from what the engines advertised (§16.4). */
export function registerFederation(
  registry: MethodRegistry,
  engines: readonly RemoteEngine[],
  settings: FederationSettings,
): void {
  const ordered = [...engines].sort((a, b) => b.priority - a.priority);
  const advertising = (capability: string) =>
    ordered.filter((engine) => capability in (engine.info?.capabilities ?? {}));
  registerRetrieve(registry, ordered, settings);
  registerCatalog(registry, ordered);
  for (const method of ['embed', 'rerank'] as const) {
    const targets = advertising(method);
    if (targets.length > 0) registerRouted(registry, method, targets);
  }
  // Shards are the writable leaves reached at start: a gateway (it advertises catalog) shards its own writes, and a
  // fixed shard set keeps every document's owner stable.
  const shards = ordered.filter((engine) => {
    const capabilities = engine.info?.capabilities ?? {};
    return isJsonObject(capabilities.index) && capabilities.index.writable === true && !('catalog' in capabilities);
  });
  if (shards.length > 0) registerIndex(registry, shards, settings);
  for (const [feature, value] of Object.entries(federatedCapabilities(ordered))) {
    registry.advertise(feature, value as JsonObject);
  }
}

/** §16.4: the union of the feature capabilities the engines advertise (the first engine's value, by priority). */
export function federatedCapabilities(engines: readonly RemoteEngine[]): JsonObject {
  const ordered = [...engines].sort((a, b) => b.priority - a.priority);
  const union: JsonObject = {};
  for (const key of PASSED_THROUGH) {
    const first = ordered.find((engine) => key in (engine.info?.capabilities ?? {}));
    if (first !== undefined) union[key] = first.info?.capabilities[key];
  }
  return union;
}

function federationOf(meta: JsonObject, settings: FederationSettings): Federation {
  const given = isJsonObject(meta.federation) ? meta.federation : {};
  const depth = typeof given.depth === 'number' && Number.isInteger(given.depth) ? given.depth : settings.depth;
  const path = Array.isArray(given.path) ? given.path.filter((hop): hop is string => typeof hop === 'string') : [];
  return { depth, path };
}

/** Shards of one corpus: every engine embeds with the same model (§15.7 `embed.identity`). */
function sameEncoder(engines: readonly RemoteEngine[]): boolean {
  const identities = engines.map((engine) => {
    const embed = engine.info?.capabilities.embed;
    return isJsonObject(embed) && typeof embed.identity === 'string' ? embed.identity : undefined;
  });
  return identities[0] !== undefined && identities.every((identity) => identity === identities[0]);
}

const nameOf = (engine: RemoteEngine): string | undefined => {
  const name = engine.info?.server.name;
  return typeof name === 'string' ? name : undefined;
};

function registerRetrieve(
  registry: MethodRegistry,
  engines: readonly RemoteEngine[],
  settings: FederationSettings,
): void {
  const advertised = (engine: RemoteEngine) => isJsonObject(engine.info?.capabilities.retrieve);
  // An engine not reached yet is tried too (its call connects first): a dead engine is then named, and a required
  // one fails the query, rather than silently dropping out of the federation.
  const capable = () => engines.filter((engine) => engine.info === undefined || advertised(engine));
  const retrieves = engines.filter(advertised).map((engine) => engine.info?.capabilities.retrieve as JsonObject);
  const maxK = Math.max(1, ...retrieves.map((r) => (typeof r.maxK === 'number' ? r.maxK : 1)));
  const modes = [...new Set(retrieves.flatMap((r): unknown[] => (Array.isArray(r.modes) ? r.modes : [])))];
  const capability: JsonObject = { maxK, ...(modes.length > 0 ? { modes } : {}) };

  const definition: MethodDefinition<typeof RetrieveParams> = {
    method: 'retrieve',
    params: RetrieveParams,
    handler: async (params, ctx) => {
      const started = performance.now();
      const federation = federationOf(ctx.meta, settings);
      const notes: string[] = [];
      const degraded: JsonObject[] = [];
      const answer = (hits: JsonObject[], candidates: number): JsonObject => ({
        hits,
        usage: {
          candidates,
          latencyMs: Math.round(performance.now() - started),
          ...(notes.length > 0 ? { notes } : {}),
        },
        ...(degraded.length > 0 ? { _meta: { degraded } } : {}),
      });
      // §16.2 loop detection: never forward at depth 0, never to an engine already on the path.
      if (federation.path.includes(settings.id)) {
        notes.push(`cycle: gateway ${settings.id} is already on the path ${JSON.stringify(federation.path)}`);
        return answer([], 0);
      }
      if (federation.depth <= 0) {
        notes.push(`hop budget exhausted at gateway ${settings.id}, which has no index of its own`);
        return answer([], 0);
      }
      const targets = capable().filter((engine) => {
        const onPath = federation.path.includes(engine.id) || federation.path.includes(nameOf(engine) ?? '\u0000');
        if (onPath) notes.push(`cycle: engine ${engine.id} is already on the path; skipped`);
        return !onPath;
      });
      if (targets.length === 0) {
        if (capable().length === 0) throw RpcError.backendUnavailable('no engine can retrieve', 1000);
        return answer([], 0); // every engine is on the path: the cycle is noted, nothing to forward
      }
      // §16.2 budget: forward a strictly smaller deadline, keeping a reserve for fusion.
      const left = ctx.remainingMs();
      const reserve = Math.max(settings.fusionReserveMs, left * 0.1);
      const budget = Math.floor(left - reserve);
      if (budget <= 0) throw RpcError.timeout(Math.round(left));
      // §16.2 headroom: shards re-fused globally get 2k each, since a shard's own normalisation may rank a global
      // top-k document a little lower; the rank-based strategies gain nothing from more.
      const asked = settings.fusion.method === 'shards' ? params.k * 2 : params.k;
      const forwarded = (engine: RemoteEngine): JsonObject => {
        const retrieve = engine.info?.capabilities.retrieve;
        const engineMaxK = isJsonObject(retrieve) ? retrieve.maxK : undefined;
        const { progressToken: _progress, ...meta } = ctx.meta;
        void _progress;
        const call: JsonObject = {
          ...(params as JsonObject),
          k: typeof engineMaxK === 'number' ? Math.min(asked, engineMaxK) : asked,
          _meta: {
            ...meta,
            deadlineMs: budget,
            federation: { depth: federation.depth - 1, path: [...federation.path, settings.id] },
          },
        };
        return scopedForCaller(call, ctx.caller);
      };
      const settled = await Promise.allSettled(
        targets.map((engine) =>
          engine.call('retrieve', forwarded(engine), {
            deadlineMs: budget,
            signal: ctx.signal,
            attempts: settings.attempts,
          }),
        ),
      );
      ctx.signal.throwIfAborted();
      const lists = [];
      let candidates = 0;
      for (const [i, outcome] of settled.entries()) {
        const engine = targets[i]!;
        if (outcome.status === 'rejected') {
          const error = RpcError.from(outcome.reason);
          if (engine.required) throw error;
          notes.push(`engine ${engine.id} skipped: ${error.code} ${error.message}`);
          degraded.push({ engine: engine.id, code: error.code, message: error.message });
          continue;
        }
        const hits = Array.isArray(outcome.value.hits) ? outcome.value.hits.filter(isJsonObject) : [];
        candidates += hits.length;
        const usage = isJsonObject(outcome.value.usage) ? outcome.value.usage : {};
        if (Array.isArray(usage.notes)) for (const note of usage.notes) notes.push(`${engine.id}: ${String(note)}`);
        const retrieve = engine.info?.capabilities.retrieve;
        const scoreFloor =
          isJsonObject(retrieve) && typeof retrieve.scoreFloor === 'number' ? retrieve.scoreFloor : undefined;
        lists.push({ engine: engine.id, weight: engine.weight, hits, scoreFloor });
      }
      if (lists.length === 0) {
        // Every engine refusing the request itself the same way (-32602, -32005, ...) is the request's fault, not a
        // backend's: that answer is the client's to fix. Otherwise nothing answered is -32010, never an empty
        // success (§16.2).
        const errors = settled.flatMap((outcome) =>
          outcome.status === 'rejected' ? [RpcError.from(outcome.reason)] : [],
        );
        const [first] = errors;
        if (first !== undefined && errors.every((e) => e.code === first.code && e.data.retryable === false))
          throw first;
        throw RpcError.backendUnavailable(`every engine failed: ${notes.join('; ')}`, 1000);
      }
      let method = settings.fusion.method;
      if (method === 'convex' && lists.some((list) => list.scoreFloor === undefined)) {
        // §16.3: convex only when every engine advertises scoreFloor; otherwise RRF.
        notes.push('fusion: convex needs scoreFloor from every engine; rrf was used');
        method = 'rrf';
      }
      if (method === 'shards' && !sameEncoder(targets)) {
        notes.push('fusion: shards needs one embed.identity across engines; rrf was used');
        method = 'rrf';
      }
      const fusion = isJsonObject((params as JsonObject).fusion) ? ((params as JsonObject).fusion as JsonObject) : {};
      const alpha = typeof fusion.alpha === 'number' ? fusion.alpha : undefined;
      const fused = fuseEngines(lists, { method, rrfK: settings.fusion.rrfK, alpha }).slice(0, params.k);
      return answer(fused, candidates);
    },
  };
  registry.register(definition, capability);
}

function registerCatalog(registry: MethodRegistry, engines: readonly RemoteEngine[]): void {
  const definition: MethodDefinition<typeof AnyParams> = {
    method: 'catalog/list',
    params: AnyParams,
    handler: () => ({
      engines: engines.map((engine) => ({
        id: engine.id,
        server: engine.info?.server ?? { name: engine.id, version: 'unknown' },
        capabilities: engine.info?.capabilities ?? {},
        ...(engine.endpoint === undefined ? {} : { endpoint: engine.endpoint }),
      })),
    }),
  };
  registry.register(definition, { engines: engines.length });
}

function registerRouted(registry: MethodRegistry, method: 'embed' | 'rerank', targets: readonly RemoteEngine[]): void {
  const definition: MethodDefinition<typeof AnyParams> = {
    method,
    params: AnyParams,
    handler: (params, ctx) => firstAnswer(targets, method, params, ctx),
  };
  registry.register(definition, (targets[0]?.info?.capabilities[method] ?? {}) as JsonObject);
}

/** The shard that owns a document id: a stable hash, the same in every gateway with the same shard list. */
export function shardOf(id: string, shards: number): number {
  return createHash('sha256').update(id).digest().readUInt32BE(0) % shards;
}

function registerIndex(registry: MethodRegistry, shards: readonly RemoteEngine[], settings: FederationSettings): void {
  // Shards are ordered by registry id, not priority, so re-prioritising engines never moves documents.
  const byId = [...shards].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const call = (engine: RemoteEngine, method: string, params: JsonObject, ctx: RequestContext) =>
    engine.call(method, scopedForCaller(params, ctx.caller), {
      deadlineMs: ctx.remainingMs(),
      signal: ctx.signal,
      attempts: settings.attempts,
    });

  const add: MethodDefinition<typeof IndexAddParams> = {
    method: 'index/add',
    params: IndexAddParams,
    handler: async (params, ctx) => {
      // A document without an id gets one here (its content hash), so it has an owning shard and a retry is an upsert.
      const documents = (params.documents as JsonObject[]).map((doc) =>
        typeof doc.id === 'string' ? doc : { ...doc, id: createHash('sha256').update(String(doc.text)).digest('hex') },
      );
      const groups = new Map<number, number[]>();
      documents.forEach((doc, i) => {
        const shard = shardOf(String(doc.id), byId.length);
        groups.set(shard, [...(groups.get(shard) ?? []), i]);
      });
      const { documents: _documents, ...rest } = params as JsonObject;
      void _documents;
      const ids: string[] = new Array<string>(documents.length);
      let chunks = 0;
      await Promise.all(
        [...groups].map(async ([shard, positions]) => {
          const result = await call(
            byId[shard]!,
            'index/add',
            { ...rest, documents: positions.map((i) => documents[i]) },
            ctx,
          );
          const shardIds = Array.isArray(result.ids) ? result.ids : [];
          positions.forEach((position, j) => (ids[position] = String(shardIds[j])));
          if (typeof result.chunks === 'number') chunks += result.chunks;
        }),
      );
      return { ids, chunks };
    },
  };

  const remove: MethodDefinition<typeof IndexDeleteParams> = {
    method: 'index/delete',
    params: IndexDeleteParams,
    handler: async (params, ctx) => {
      const groups = new Map<number, string[]>();
      for (const id of params.ids) {
        const shard = shardOf(id, byId.length);
        groups.set(shard, [...(groups.get(shard) ?? []), id]);
      }
      const counts = await Promise.all(
        [...groups].map(async ([shard, ids]) => (await call(byId[shard]!, 'index/delete', { ids }, ctx)).deleted),
      );
      return { deleted: counts.reduce<number>((sum, n) => sum + (typeof n === 'number' ? n : 0), 0) };
    },
  };
  const index = { ...(byId[0]?.info?.capabilities.index as JsonObject), shards: byId.length };
  registry.register(add, index).register(remove, {});
}
