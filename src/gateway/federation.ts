import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { UnansweredError, type RemoteEngine } from './remote-engine.js';
import type { RequestContext } from '../protocol/context.js';
import { RpcError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/messages.js';
import type { MethodDefinition, MethodRegistry } from '../protocol/registry.js';
import { CatalogListParams, IndexAddParams, IndexDeleteParams } from '../protocol/schemas/params.js';
import { firstAnswer } from './failover.js';
import { registerRetrieve } from './federated-retrieve.js';
import { scopedForCaller } from './forwarding.js';
import { engineBudget, type FederationSettings } from './federated-hops.js';
import { RpcErrorCode } from '../protocol/codes.js';
import { shardOf } from '../protocol/placement.js';

/**
 * The gateway's methods (§16): it is an RCP server to its clients and an RCP client to its engines.
 * - `retrieve` (federated-retrieve.ts): fan-out to every engine advertising retrieve, concurrently, each asked for
 *   `k`, under a deadline that leaves a fusion reserve; loop detection by `_meta.federation {depth, path}`; partial
 *   failure noted in `usage.notes` and `_meta.degraded`; a required engine's failure fails the query with its code;
 *   all failing is -32010; fusion per §16.3.
 * - `catalog/list` (§7.13): the engines, their identities and capabilities, and an endpoint for HTTP ones.
 * - `embed`, `embed/multi`, `rerank`: routed to the highest-priority engine that advertises them (`embed`,
 *   `multiVector`, `rerank`), failing over on -32010.
 * - `index/add`, `index/delete`: each document to one shard (the writable leaf engines reached at start) by a
 *   stable hash of its id.
 */
export type { FederationSettings };

const AnyParams = Type.Object({});

/** The methods served by one engine, each with the capability that gates it (§6). */
const ROUTED = [
  ['embed', 'embed'],
  ['embed/multi', 'multiVector'],
  ['rerank', 'rerank'],
] as const;
type RoutedMethod = (typeof ROUTED)[number][0];

/** Feature capabilities passed through from the engines (union, §16.4): retrieve options the engines honour. */
const PASSED_THROUGH = ['filter', 'citations'] as const;

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
  for (const [method, capability] of ROUTED) {
    const targets = advertising(capability);
    if (targets.length > 0) registerRouted(registry, method, capability, targets);
  }
  // Shards are the writable leaves (a gateway, which advertises catalog, shards its own writes), and every engine not
  // reached at start: it keeps its place, its documents' writes answered -32010 until it answers, so that an engine
  // down at start never moves the owner of any document (docs/replicas.md, "Partitions"). Writes are served when at
  // least one engine reached at start is a writable leaf.
  const writableLeaf = (engine: RemoteEngine) => {
    const capabilities = engine.info?.capabilities ?? {};
    return isJsonObject(capabilities.index) && capabilities.index.writable === true && !('catalog' in capabilities);
  };
  const shards = ordered.filter((engine) => engine.info === undefined || writableLeaf(engine));
  if (shards.some(writableLeaf)) registerIndex(registry, shards, settings);
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

function registerCatalog(registry: MethodRegistry, engines: readonly RemoteEngine[]): void {
  const definition: MethodDefinition<typeof CatalogListParams> = {
    method: 'catalog/list',
    params: CatalogListParams,
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

function registerRouted(
  registry: MethodRegistry,
  method: RoutedMethod,
  capability: string,
  targets: readonly RemoteEngine[],
): void {
  const definition: MethodDefinition<typeof AnyParams> = {
    method,
    params: AnyParams,
    handler: (params, ctx) => firstAnswer(targets, method, params, ctx),
  };
  registry.register(definition, (targets[0]?.info?.capabilities[capability] ?? {}) as JsonObject);
}

export { shardOf };

function registerIndex(registry: MethodRegistry, shards: readonly RemoteEngine[], settings: FederationSettings): void {
  // Shards are ordered by registry id, not priority, so re-prioritising engines never moves documents.
  const byId = [...shards].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const call = (engine: RemoteEngine, method: string, params: JsonObject, ctx: RequestContext) =>
    shardCall(engine, method, params, ctx, settings);

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
      const shardWrites = [...groups].map(([shard, positions]) => ({
        engine: byId[shard]!,
        ids: positions.map((i) => String(documents[i]!.id)),
        write: async () => {
          const result = await call(
            byId[shard]!,
            'index/add',
            { ...rest, documents: positions.map((i) => documents[i]) },
            ctx,
          );
          const shardIds = Array.isArray(result.ids) ? result.ids : [];
          positions.forEach((position, j) => (ids[position] = String(shardIds[j])));
          if (typeof result.chunks === 'number') chunks += result.chunks;
        },
      }));
      await allShards('index/add', shardWrites);
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
      let deleted = 0;
      const shardWrites = [...groups].map(([shard, ids]) => ({
        engine: byId[shard]!,
        ids,
        write: async () => {
          const count = (await call(byId[shard]!, 'index/delete', { ids }, ctx)).deleted;
          deleted += typeof count === 'number' ? count : 0;
        },
      }));
      await allShards('index/delete', shardWrites);
      return { deleted };
    },
  };
  // §6.2: how many shards the gateway's writes are split over is this server's fact, so a vendor field.
  const index = { ...(byId[0]?.info?.capabilities.index as JsonObject), 'x-rcp-server-shards': byId.length };
  registry.register(add, index).register(remove, {});
}

/**
 * One shard's part of a write (§16.2 budget): the engine gets a strictly smaller deadline than ours (engineBudget, the
 * reserve retrieve keeps for fusion), so its own answer — its result, or its -32014 when it applied nothing (§13.1) —
 * comes back in the reserve. Once sent, the write is this request's commit: our own deadline no longer answers it
 * with a bare -32014 (the engine may be applying it); only the engine's answer, or after the whole of what was left
 * no answer, which says the write may have been applied.
 */
async function shardCall(
  engine: RemoteEngine,
  method: string,
  params: JsonObject,
  ctx: RequestContext,
  settings: FederationSettings,
): Promise<JsonObject> {
  const left = ctx.remainingMs();
  const budget = engineBudget(left, settings.fusionReserveMs);
  ctx.commit();
  const meta = isJsonObject(params._meta) ? params._meta : {};
  const forwarded = scopedForCaller({ ...params, _meta: { ...meta, deadlineMs: budget } }, ctx.caller);
  try {
    return await engine.call(method, forwarded, { deadlineMs: left, attempts: settings.attempts });
  } catch (error) {
    if (!(error instanceof UnansweredError && error.code === RpcErrorCode.Timeout)) throw error;
    throw new RpcError(
      RpcErrorCode.Timeout,
      `engine ${engine.id} did not answer ${method} within ${Math.round(left)} ms: its part may have been applied ` +
        '(retry with the same idempotencyKey)',
      { ...error.data, ...vendorData({ engine: engine.id }) },
    );
  }
}

/** One shard's part of a gateway write: the engine, the document ids it owns, and the call that writes them. */
interface ShardWrite {
  readonly engine: RemoteEngine;
  readonly ids: readonly string[];
  readonly write: () => Promise<void>;
}

/**
 * Runs every shard's part of a write at once and waits for all of them. When some fail, the error must tell the
 * truth about what was applied (§12): each shard's write is its own, so shards that answered applied theirs even
 * though another failed. With none applied, the first failure is answered as the shard gave it; otherwise its code is
 * kept (a retry of the whole write is an upsert or a repeated delete, so it is as retryable as the failure was) and
 * the message and `data['x-rcp-server-applied']` / `data['x-rcp-server-failed']` name the ids on each side (a failed shard's own message says
 * whether its part was applied: nothing, or perhaps).
 */
async function allShards(method: string, writes: readonly ShardWrite[]): Promise<void> {
  const outcomes = await Promise.allSettled(writes.map((shard) => shard.write()));
  const failed = writes.filter((_, i) => outcomes[i]!.status === 'rejected');
  if (failed.length === 0) return;
  const first = (outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult).reason as unknown;
  // Only an engine's answer is the engine's; anything else is our defect, for the dispatch (docs/architecture.md §6).
  if (!(first instanceof RpcError) || failed.length === writes.length) throw first;
  const applied = writes.filter((shard) => !failed.includes(shard));
  const names = (shards: readonly ShardWrite[]) => shards.map((shard) => shard.engine.id).join(', ');
  const count = (shards: readonly ShardWrite[]) => shards.reduce((sum, shard) => sum + shard.ids.length, 0);
  throw new RpcError(
    first.code,
    `${method} applied to ${count(applied)} of ${count(writes)} documents (engines ${names(applied)}); ` +
      `the other ${count(failed)} failed on engines ${names(failed)}: ${first.message}`,
    {
      ...first.data,
      ...vendorData({ applied: applied.flatMap((shard) => shard.ids), failed: failed.flatMap((shard) => shard.ids) }),
    },
  );
}

/**
 * §6.2 `error.data` fields beyond §12.1's, under the vendor prefix; each also under its unprefixed name, which this
 * server used before, for one release (docs/protocol.md, "Deprecated names").
 */
function vendorData(fields: Record<string, unknown>): Record<string, unknown> {
  const prefixed = Object.entries(fields).map(([name, value]): [string, unknown] => [`x-rcp-server-${name}`, value]);
  return { ...fields, ...Object.fromEntries(prefixed) };
}
