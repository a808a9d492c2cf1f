import type { Static } from '@sinclair/typebox';
import type { CorpusReader } from '../corpus/index.js';
import type { Encoder } from '../models/index.js';
import type { RequestContext } from '../protocol/context.js';
import type { JsonObject } from '../protocol/messages.js';
import { RetrieveParams } from '../protocol/schemas/params.js';
import type { MethodDefinition } from '../protocol/registry.js';
import { TimeSlice } from '../protocol/time-slice.js';
import { stage, textAttribute, type Attributes } from '../protocol/tracing.js';
import { AnswerBudget } from '../retrieval/answer-budget.js';
import { buildHits, reportUsage } from '../retrieval/answer.js';
import { confidenceOf, withConfidence, type CalibrationTable } from '../retrieval/confidence.js';
import { CursorCodec } from '../retrieval/cursor.js';
import { diversify } from '../retrieval/diversify.js';
import { rerankFunnel } from '../retrieval/funnel.js';
import { groupUnits, uniqueIds } from '../retrieval/grouping.js';
import { focusPage, type Focus } from '../retrieval/focus.js';
import { bodyOf, buildHit, hitId, type TrustLevel } from '../retrieval/hits.js';
import { screenBodies, type InjectionSettings } from '../retrieval/trust.js';
import { packTokenBudget } from '../retrieval/packing.js';
import { cursorAfter, openPage, pageOf } from '../retrieval/paging.js';
import { planQueries } from '../retrieval/query-plan.js';
import { atLeast, rankLists, type Scored } from '../retrieval/ranking.js';
import { recall, type RecallPlan } from '../retrieval/recall.js';
import { advertisedScales, scoreScaleOf, type Space } from '../retrieval/score-scale.js';
import { applyRecency } from '../retrieval/recency.js';
import {
  FUSIONS,
  MODES,
  resolveOptions,
  UNITS,
  type ResolvedOptions,
  type OptionSettings,
  type Unit,
} from '../retrieval/retrieve-options.js';
import { SessionDedup, type SeenStore } from '../retrieval/session-dedup.js';
import { rememberReturned, seenBefore, skipSeen } from '../retrieval/session-skip.js';
import type { ContentReader } from './content.js';
import type { Reranker } from './rerank.js';

type Params = Static<typeof RetrieveParams>;

const DECLARED = Object.keys(RetrieveParams.properties) as (keyof Params)[];
/**
 * The params this method declares: what a cursor's digest covers (§10). Unknown fields are ignored (§7.7), so they
 * neither change the ranking nor get hashed — a 16 MB one held the event loop 80-290 ms in the digest.
 */
const declaredOf = (params: Params) =>
  Object.fromEntries(DECLARED.filter((key) => key in params).map((key) => [key, params[key]]));

/** Option resolution's defaults and bounds (OptionSettings), and what the rest of the pipeline needs. */
export interface RetrieveSettings extends OptionSettings {
  readonly sessionTtlSeconds: number;
  /** §7.7.3 sessions shared by replicas (the store of record's); absent: remembered in this process. */
  readonly seen?: SeenStore | undefined;
  /** The key cursors are signed with, shared by replicas ('' or absent: this process's own). */
  readonly cursorSecret?: string | undefined;
  readonly trust: Readonly<Record<string, TrustLevel>>;
  /** docs/trust.md: when a hit is `injectionSuspected`, and whether its hidden characters are removed. */
  readonly injection: InjectionSettings;
  /** §15.5 the longest query (the filter's bounds are OptionSettings'). */
  readonly maxQueryChars: number;
  /** §15.5 the largest answer: hits are built only while they fit. */
  readonly maxResponseBytes: number;
  /** §15.5 hit bytes being built across all requests at once; past it a request is -32011. */
  readonly maxAnswerBytesInFlight: number;
  readonly content: ContentReader;
  /** §6.1 the theoretical minimum of Hit.score, when there is one (advertised for federated convex fusion). */
  readonly scoreFloor?: number | undefined;
  /** The dense index's space (`index.space`): what a dense score is (§6.1 `scoreScale`). */
  readonly space: Space;
  /** §7.7.1 whether recent versions stay queryable (index.snapshots). */
  readonly snapshots?: boolean | undefined;
  /** Whether hits quote the sentence that best answers the query (`retrieve.quotes`). */
  readonly quotes: boolean;
  /** §7.7.2 the calibrations behind `confidence`, one per pipeline, each fitted on this server's scoring. */
  readonly calibrations: readonly CalibrationTable[];
}

/** What one retrieve handler works with: the ports, the settings, and the state kept across requests. */
interface Retriever {
  readonly corpus: CorpusReader;
  readonly encoder: Encoder;
  readonly rerankers: readonly Reranker[];
  readonly settings: RetrieveSettings;
  readonly cursors: CursorCodec;
  readonly answers: AnswerBudget;
  readonly sessions: SeenStore;
}

/**
 * `retrieve` (§7.7): recall (dense HNSW / sparse BM25, filtered during recall), fusion (§16.3), recency, the rerank
 * funnel, minScore, unit grouping, session dedup, MMR, pagination, token-budget packing; progress at each stage
 * (§9) and cancellation between stages.
 */
export function retrieveMethod(
  corpus: CorpusReader,
  encoder: Encoder,
  rerankers: readonly Reranker[],
  settings: RetrieveSettings,
): [MethodDefinition<typeof RetrieveParams>, JsonObject] {
  const retriever: Retriever = {
    corpus,
    encoder,
    rerankers,
    settings,
    cursors: new CursorCodec(settings.cursorSecret),
    answers: new AnswerBudget(settings.maxAnswerBytesInFlight),
    sessions: settings.seen ?? new SessionDedup(settings.sessionTtlSeconds),
  };
  const definition: MethodDefinition<typeof RetrieveParams> = {
    method: 'retrieve',
    params: RetrieveParams,
    handler: (params, ctx) => retrieve(retriever, params, ctx),
  };
  return [definition, capabilityOf(settings, rerankers)];
}

/** §6.1 the `retrieve` capability: what the handler below can do, derived from what is configured. */
function capabilityOf(settings: RetrieveSettings, rerankers: readonly Reranker[]): JsonObject {
  return {
    maxK: settings.maxK,
    modes: [...MODES],
    fusion: [...FUSIONS],
    mmr: true,
    rerankBuiltin: rerankers.length > 0,
    units: [...UNITS],
    tokenBudget: true,
    // §7.7.1: a `seed` makes the one step that depends on how a process built its index exact (retrieve-options.ts).
    deterministic: true,
    // §7.7.1: a window of recent versions stays queryable, exactly (index.snapshots).
    ...(settings.snapshots ? { snapshots: true } : {}),
    defaultMode: settings.defaultMode,
    ...advertisedScales(settings.defaultMode, settings.space),
    ...(settings.scoreFloor === undefined ? {} : { scoreFloor: settings.scoreFloor }),
    // §7.7.2: advertised when the default pipeline's hits carry it (hits of other calibrated pipelines do too).
    ...(defaultConfidence(settings, rerankers) ? { confidence: true } : {}),
    // Which index serves `mode: "sparse"`: lexical BM25, not a learned-sparse model (§6.2: a vendor field).
    'x-rcp-server-sparse': 'bm25',
  };
}

/**
 * Each hit's focus (focus.ts): its passage and quote. Without quotes (`retrieve.quotes` off) only a passage hit needs
 * one, and carries no quote.
 */
async function focusOf(
  page: readonly Scored[],
  unit: Unit,
  quotes: boolean,
  ...read: [query: string, corpus: CorpusReader, slice: TimeSlice, signal: AbortSignal]
): Promise<Map<number, Focus>> {
  if (!quotes && unit !== 'passage') return new Map();
  const focus = await focusPage(page, ...read);
  if (!quotes) for (const [label, { passage }] of focus) focus.set(label, { passage });
  return focus;
}

/** Whether a request that sets no option gets hits with a confidence: a table fits the default pipeline. */
function defaultConfidence(settings: RetrieveSettings, rerankers: readonly Reranker[]): boolean {
  const mode = settings.defaultMode;
  const fusion = { ...settings.fusion, weights: {} };
  // A cross-encoder reranks by default (retrieve-options.ts), and reranked scores are no table's.
  const reranked = rerankers.some((reranker) => reranker.method === 'cross-encoder');
  const request = { mode, fusion, reranked, lists: mode === 'hybrid' ? 2 : 1 };
  return confidenceOf(settings.calibrations, request) !== undefined;
}

/** What a recall span says of its plan (never the query's text unless `tracing.includeText`, §15.6). */
function recallAttributes(plan: RecallPlan & { query: string }): Attributes {
  return {
    'rcp.mode': plan.mode,
    'rcp.candidate_k': plan.candidateK,
    'rcp.filtered': plan.allow !== undefined,
    ...textAttribute('rcp.query', plan.query),
  };
}

/**
 * The candidates as one ranking: the query read, the filter's labels, the query plan, recall, fusion, recency and the
 * rerank funnel, each stage a span when tracing is on (docs/operations.md "Tracing").
 */
async function rankCandidates(
  { encoder, settings }: Retriever,
  corpus: CorpusReader,
  params: Params,
  options: ResolvedOptions<Reranker>,
  ctx: RequestContext,
) {
  const { unit, notes } = options;
  const idOf = (label: number) => hitId(corpus, label, unit);
  const asked = await stage('retrieve.query', {}, () =>
    settings.content.query(params.query, settings.maxQueryChars, ctx.signal),
  );
  const { predicate } = options;
  const allow =
    predicate === undefined
      ? undefined
      : await stage('retrieve.filter', {}, () => corpus.labelsWhere(predicate, ctx.signal));
  const queries = await stage('retrieve.plan', {}, () => planQueries(corpus, asked, params.rewrite, notes, ctx.signal));
  const recallPlan = { ...options, ...queries, allow };
  const { lists, candidates } = await stage('retrieve.recall', recallAttributes(recallPlan), () =>
    recall(corpus, encoder, recallPlan, ctx),
  );
  let ranked = stage('retrieve.fuse', { 'rcp.lists': lists.length }, () =>
    rankLists(lists, options.fusion, options.candidateK, idOf, ctx),
  );
  ranked = applyRecency(ranked, params.recency, corpus);
  ctx.signal.throwIfAborted();
  const funnel = await stage('retrieve.rerank', { 'rcp.top_n': options.topN }, () =>
    rerankFunnel(ranked, options.reranker, options.topN, queries.query, corpus, ctx),
  );
  return { queries, lists, candidates, funnel };
}

const RECENCY_ON_A_PIN = 'recency: ages are counted from now, so a pinned version ranks by the clock too';

async function retrieve(retriever: Retriever, params: Params, ctx: RequestContext): Promise<JsonObject> {
  const { encoder, settings, cursors, sessions } = retriever;
  const started = performance.now();
  // §7.7.1: a pinned version is read as it was (snapshots), or refused; unpinned, the live corpus.
  const corpus = await retriever.corpus.at(params.indexVersion);
  const indexVersion = corpus.indexVersion;
  const options = resolveOptions(params, settings, retriever.rerankers);
  const { k, unit, notes } = options;
  // §7.7.1: a version holds documents, not the clock recency ages them by.
  if (params.indexVersion !== undefined && params.recency !== undefined) notes.push(RECENCY_ON_A_PIN);
  const idOf = (label: number) => hitId(corpus, label, unit);

  // Recall, fuse, rescore: one ranking of the candidates.
  const { queries, lists, candidates, funnel } = await rankCandidates(retriever, corpus, params, options, ctx);
  let ranked = groupUnits(atLeast(funnel.ranked, params.minScore), unit, corpus);
  const reranked = options.reranker !== undefined;
  const expanded = queries.lexicalQuery !== queries.query;
  const confidence = confidenceOf(settings.calibrations, { ...options, reranked, lists: lists.length, expanded });

  // The page: where the cursor left off, without what the session has seen, diversified, packed.
  const start = openPage(cursors, declaredOf(params), indexVersion, ctx.caller);
  const seen = await seenBefore(sessions, ctx.caller, params.sessionId, start.seenMark);
  ranked = skipSeen(ranked, seen, idOf);
  if (params.mmr !== undefined) {
    const { lambda } = params.mmr;
    ranked = await stage('retrieve.mmr', {}, () => diversify(ranked, start.offset + k, lambda, corpus, ctx.signal));
  }
  // Focusing, packing and building hits read a stored text per hit: in time slices.
  const building = new TimeSlice(ctx.signal);
  const page = pageOf(ranked, start, k);
  const focus = await stage('retrieve.focus', { 'rcp.hits': page.length }, () =>
    focusOf(page, unit, settings.quotes, queries.query, corpus, building, ctx.signal),
  );
  const bodyOfHit = (hit: Scored) => bodyOf(corpus, hit.label, unit, focus.get(hit.label));
  const packed = await stage('retrieve.pack', {}, () =>
    packTokenBudget(page, params.tokenBudget, bodyOfHit, encoder, building),
  );
  const labels = packed.page.map((hit) => hit.label);
  await stage('retrieve.screen', { 'rcp.hits': labels.length }, () =>
    screenBodies(labels, unit, corpus, (label) => bodyOf(corpus, label, unit, focus.get(label)), ctx.signal),
  );
  ctx.progress('pack', 0.9, { message: `${packed.page.length} hits` });

  // The answer.
  const { trust, injection } = settings;
  const shape = { unit, includeText: params.includeText, includeVectors: params.includeVectors, trust, injection };
  const limits = { maxResponseBytes: settings.maxResponseBytes, answers: retriever.answers };
  const build = (hit: Scored) => withConfidence(buildHit(corpus, hit, shape, focus.get(hit.label)), confidence?.(hit));
  const built = await stage('retrieve.hits', { 'rcp.hits': packed.page.length }, () =>
    buildHits(packed.page, build, limits, building),
  );
  const hits = uniqueIds(built);
  corpus.verify();
  await rememberReturned(sessions, ctx.caller, params.sessionId, hits);
  const nextCursor = cursorAfter(cursors, start, {
    total: ranked.length,
    returned: packed.page.length,
    tokenBudget: params.tokenBudget,
    indexVersion,
    seenMark: seen?.mark,
  });
  const fusedBy = lists.length > 1 ? options.fusion.method : undefined;
  const served = { hits: hits.length, candidates, reranked: funnel.reranked, tokens: packed.tokens, fusedBy };
  const scale = scoreScaleOf({ mode: options.mode, reranked, recency: params.recency !== undefined }, settings.space);
  const usage = reportUsage({ ...served, notes, mode: options.mode, started, scoreScale: scale }, ctx);
  return {
    hits,
    indexVersion,
    ...(nextCursor === undefined ? {} : { nextCursor }),
    ...(params.rewrite === 'rewrite' ? { rewrittenQuery: queries.query } : {}),
    usage,
  };
}
