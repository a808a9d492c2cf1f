import type { RemoteEngine } from './remote-engine.js';
import { RpcError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/messages.js';
import type { EngineHits, FederatedFusion } from './federated-fusion.js';

/**
 * The gateway's `retrieve` after the fan-out (§16.2, §16.3): the engines' answers merged into ranked lists with the
 * notes on what was skipped, the error when nothing answered, the fusion strategy the lists allow, and the reply.
 * Every function here is pure.
 */

/** The engines' answers as fusion input, with what the reply says about them. */
export interface Merged {
  readonly lists: EngineHits[];
  /** Hits returned by the engines, before fusion (§7.7 `usage.candidates`). */
  readonly candidates: number;
  /** Each skipped engine, and each engine's own notes prefixed with its id. */
  readonly notes: string[];
  /** `_meta.degraded`: one entry per skipped engine. */
  readonly degraded: JsonObject[];
}

/**
 * §16.2 partial failure: an engine that failed is skipped and named in the notes and `_meta.degraded`, unless it is
 * required, which fails the query with its own error. `settled` is in the order of `engines`. A rejection that is not
 * an RpcError is no engine's failure but a defect: thrown on (see `engineFailure`).
 */
export function mergeAnswers(
  engines: readonly RemoteEngine[],
  settled: readonly PromiseSettledResult<JsonObject>[],
): Merged {
  const lists: EngineHits[] = [];
  const notes: string[] = [];
  const degraded: JsonObject[] = [];
  let candidates = 0;
  for (const [i, outcome] of settled.entries()) {
    const engine = engines[i]!;
    if (outcome.status === 'rejected') {
      const error = engineFailure(outcome.reason);
      if (engine.required) throw error;
      notes.push(`engine ${engine.id} skipped: ${error.code} ${error.message}`);
      degraded.push({ engine: engine.id, code: error.code, message: error.message });
      continue;
    }
    const hits = Array.isArray(outcome.value.hits) ? outcome.value.hits.filter(isJsonObject) : [];
    candidates += hits.length;
    const usage = isJsonObject(outcome.value.usage) ? outcome.value.usage : {};
    if (Array.isArray(usage.notes)) for (const note of usage.notes) notes.push(`${engine.id}: ${String(note)}`);
    lists.push({ engine: engine.id, weight: engine.weight, hits, scoreFloor: scoreFloorOf(engine) });
  }
  return { lists, candidates, notes, degraded };
}

/**
 * An engine's failure: its answer, or the RpcError its link reported (RemoteEngine.call rejects with nothing else).
 * Anything else is a defect of ours, not a reason to skip the engine: thrown on as it is, so that the session's
 * dispatch, the one place, logs it and answers -32603 (docs/architecture.md §6).
 */
function engineFailure(reason: unknown): RpcError {
  if (reason instanceof RpcError) return reason;
  throw reason;
}

/** The engine's advertised `retrieve.scoreFloor` (§6.1), which convex fusion needs (§16.3). */
function scoreFloorOf(engine: RemoteEngine): number | undefined {
  const retrieve = engine.info?.capabilities.retrieve;
  return isJsonObject(retrieve) && typeof retrieve.scoreFloor === 'number' ? retrieve.scoreFloor : undefined;
}

/**
 * The error when no engine answered. Every engine refusing the request itself the same way (-32602, -32005, ...) is
 * the request's fault, not a backend's: that answer is the client's to fix. Otherwise nothing answered is -32010,
 * never an empty success (§16.2); its message carries the notes so far.
 */
export function noAnswerError(settled: readonly PromiseSettledResult<unknown>[], notes: readonly string[]): RpcError {
  const errors = settled.flatMap((outcome) => (outcome.status === 'rejected' ? [engineFailure(outcome.reason)] : []));
  const [first] = errors;
  if (first !== undefined && errors.every((e) => e.code === first.code && e.data.retryable === false)) return first;
  return RpcError.backendUnavailable(`every engine failed: ${notes.join('; ')}`, 1000);
}

/** Shards of one corpus: every engine embeds with the same model (§15.7 `embed.identity`). */
export function sameEncoder(engines: readonly RemoteEngine[]): boolean {
  const identities = engines.map((engine) => {
    const embed = engine.info?.capabilities.embed;
    return isJsonObject(embed) && typeof embed.identity === 'string' ? embed.identity : undefined;
  });
  return identities[0] !== undefined && identities.every((identity) => identity === identities[0]);
}

/**
 * The strategy the configured one falls back to when the engines cannot support it, with the note that says so:
 * §16.3 convex only when every engine advertises scoreFloor; shards only over one `embed.identity`; otherwise RRF.
 */
export function fusionFor(
  configured: FederatedFusion,
  lists: readonly EngineHits[],
  engines: readonly RemoteEngine[],
): { method: FederatedFusion; note?: string } {
  if (configured === 'convex' && lists.some((list) => list.scoreFloor === undefined)) {
    return { method: 'rrf', note: 'fusion: convex needs scoreFloor from every engine; rrf was used' };
  }
  if (configured === 'shards' && !sameEncoder(engines)) {
    return { method: 'rrf', note: 'fusion: shards needs one embed.identity across engines; rrf was used' };
  }
  return { method: configured };
}

/** The request's `fusion.alpha` (`shards`: the dense share), when it gave a number. */
export function alphaOf(params: JsonObject): number | undefined {
  const fusion = isJsonObject(params.fusion) ? params.fusion : {};
  return typeof fusion.alpha === 'number' ? fusion.alpha : undefined;
}

/** What the reply reports beside its hits. */
export interface AnswerFacts {
  readonly candidates: number;
  readonly latencyMs: number;
  readonly notes: readonly string[];
  readonly degraded: readonly JsonObject[];
}

/** §7.7 the reply: hits, usage (with notes when any) and `_meta.degraded` when an engine was skipped (§16.2). */
export function federatedAnswer(hits: readonly JsonObject[], facts: AnswerFacts): JsonObject {
  return {
    hits: [...hits],
    usage: {
      candidates: facts.candidates,
      latencyMs: Math.round(facts.latencyMs),
      ...(facts.notes.length > 0 ? { notes: [...facts.notes] } : {}),
    },
    ...(facts.degraded.length > 0 ? { _meta: { degraded: [...facts.degraded] } } : {}),
  };
}
