import { Type, type Static } from '@sinclair/typebox';
import type { RemoteEngine } from './remote-engine.js';
import type { RequestContext } from '../protocol/context.js';
import { RpcErrorCode } from '../protocol/codes.js';
import { RpcError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/messages.js';
import { RetrieveParams } from '../protocol/schemas/params.js';
import type { MethodDefinition, MethodRegistry } from '../protocol/registry.js';
import { fuseEngines } from './federated-fusion.js';
import {
  alphaOf,
  federatedAnswer,
  fusionFor,
  mergeAnswers,
  noAnswerError,
  type AnswerFacts,
} from './federated-answers.js';
import {
  askedK,
  engineBudget,
  engineK,
  federationOf,
  forwardedRetrieve,
  loopStop,
  offPath,
  type Hop,
} from './federated-hops.js';
import type { FederationSettings } from './federated-hops.js';

/**
 * What the gateway reads of a retrieve's params itself: `k`, as protocol/schemas/params.ts declares it, and that a
 * `query` is there. Each engine validates the whole against that same declaration.
 */
const FederatedParams = Type.Composite([Type.Object({ query: Type.Unknown() }), Type.Pick(RetrieveParams, ['k'])]);
type FederatedParams = Static<typeof FederatedParams>;

const advertised = (engine: RemoteEngine): boolean => isJsonObject(engine.info?.capabilities.retrieve);

/** §16.4: the gateway's retrieve capability: the largest `maxK` and the union of the `modes` its engines advertise. */
export function retrieveCapability(engines: readonly RemoteEngine[]): JsonObject {
  const retrieves = engines.filter(advertised).map((engine) => engine.info?.capabilities.retrieve as JsonObject);
  const maxK = Math.max(1, ...retrieves.map((r) => (typeof r.maxK === 'number' ? r.maxK : 1)));
  const modes = [...new Set(retrieves.flatMap((r): unknown[] => (Array.isArray(r.modes) ? r.modes : [])))];
  return { maxK, ...(modes.length > 0 ? { modes } : {}) };
}

/**
 * The gateway's `retrieve` (§16.2, §16.3), read as named steps: loop detection, the engines off the path, the
 * forwarded deadline, the fan-out, the merged answers, fusion, the reply. The pure steps before the fan-out are in
 * federated-hops.ts, those after it in federated-answers.ts.
 */
export function registerRetrieve(
  registry: MethodRegistry,
  engines: readonly RemoteEngine[],
  settings: FederationSettings,
): void {
  // An engine not reached yet is tried too (its call connects first): a dead engine is then named, and a required
  // one fails the query, rather than silently dropping out of the federation.
  const capable = () => engines.filter((engine) => engine.info === undefined || advertised(engine));
  const definition: MethodDefinition<typeof FederatedParams> = {
    method: 'retrieve',
    params: FederatedParams,
    handler: (params, ctx) => federatedRetrieve(params, ctx, capable(), settings),
  };
  registry.register(definition, retrieveCapability(engines));
}

async function federatedRetrieve(
  params: FederatedParams,
  ctx: RequestContext,
  capable: readonly RemoteEngine[],
  settings: FederationSettings,
): Promise<JsonObject> {
  const started = performance.now();
  const reply = (hits: JsonObject[], facts: Omit<AnswerFacts, 'latencyMs'>) =>
    federatedAnswer(hits, { ...facts, latencyMs: performance.now() - started });
  // §16.2 loop detection: never forward at depth 0, never to an engine already on the path.
  const federation = federationOf(ctx.meta, settings.depth);
  const stop = loopStop(federation, settings.id);
  if (stop !== undefined) return reply([], { candidates: 0, notes: [stop], degraded: [] });
  const { targets, notes: skipped } = offPath(capable, federation);
  // §7.7.1: each engine numbers its own versions, so a federation of several has no one snapshot a pin could name;
  // it is refused rather than answered from each engine's version of that number.
  if ((params as JsonObject).indexVersion !== undefined && targets.length > 1) {
    throw new RpcError(RpcErrorCode.BackendUnavailable, 'snapshot unavailable', {
      detail: 'a federation of several engines serves no pinned indexVersion; pin it on one engine (catalog/list)',
      retryable: false,
    });
  }
  if (targets.length === 0) {
    if (capable.length === 0) throw RpcError.backendUnavailable('no engine can retrieve', 1000);
    return reply([], { candidates: 0, notes: skipped, degraded: [] }); // every engine is on the path: noted
  }
  const budget = engineBudget(ctx.remainingMs(), settings.fusionReserveMs);
  const hop: Hop = { gateway: settings.id, federation, budget, caller: ctx.caller };
  const settled = await fanOut(targets, params, ctx, hop, settings);
  ctx.signal.throwIfAborted();
  const merged = mergeAnswers(targets, settled);
  const notes = [...skipped, ...merged.notes];
  if (merged.lists.length === 0) throw noAnswerError(settled, notes);
  const fusion = fusionFor(settings.fusion.method, merged.lists, targets);
  if (fusion.note !== undefined) notes.push(fusion.note);
  const fusing = { method: fusion.method, rrfK: settings.fusion.rrfK, alpha: alphaOf(params) };
  const hits = fuseEngines(merged.lists, fusing).slice(0, params.k);
  return reply(hits, { candidates: merged.candidates, notes, degraded: merged.degraded });
}

/** Every target asked at once, each under the forwarded deadline and with §12.2 retries; outcomes in target order. */
function fanOut(
  targets: readonly RemoteEngine[],
  params: FederatedParams,
  ctx: RequestContext,
  hop: Hop,
  settings: FederationSettings,
): Promise<PromiseSettledResult<JsonObject>[]> {
  const asked = askedK(settings.fusion.method, params.k);
  const options = { deadlineMs: hop.budget, signal: ctx.signal, attempts: settings.attempts };
  return Promise.allSettled(
    targets.map((engine) =>
      engine.call('retrieve', forwardedRetrieve(params as JsonObject, ctx.meta, engineK(engine, asked), hop), options),
    ),
  );
}
