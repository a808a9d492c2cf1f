import { Type, type Static } from '@sinclair/typebox';
import type { CorpusReader, Encoder, FieldType } from '../backend/ports.js';
import type { RequestContext } from '../protocol/context.js';
import { RpcError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/messages.js';
import type { MethodDefinition } from '../protocol/registry.js';
import { AnswerBudget } from '../retrieval/answer-budget.js';
import { CursorCodec, requestDigest } from '../retrieval/cursor.js';
import { compileFilter, OPERATORS, type FilterLimits } from '../retrieval/filter.js';
import { convex, rrf, weighted, type FusedHit, type FusionInput, type FusionMethod } from '../retrieval/fusion.js';
import { mmr, type MmrCandidate } from '../retrieval/mmr.js';
import { TimeSlice } from '../protocol/time-slice.js';
import { answerTooLarge, approximateBytes } from '../protocol/frames.js';
import { SessionDedup } from '../retrieval/session-dedup.js';
import { ContentBlock, type ContentReader } from './content.js';
import type { Reranker } from './rerank.js';

const MODES = ['dense', 'sparse', 'hybrid'] as const;
const FUSIONS = ['rrf', 'weighted', 'convex'] as const;
const UNITS = ['chunk', 'document'] as const;
type Mode = (typeof MODES)[number];
type Unit = (typeof UNITS)[number];
type TrustLevel = 'trusted' | 'community' | 'untrusted';

/** Option values are plain strings here, not enums: unsupported ones must reach the handler for §7.7's strict rule. */
const RetrieveParams = Type.Object({
  query: Type.Union([Type.String(), ContentBlock, Type.Array(ContentBlock)]),
  k: Type.Integer({ minimum: 1 }),
  mode: Type.Optional(Type.String()),
  modality: Type.Optional(Type.String()),
  candidateK: Type.Optional(Type.Integer({ minimum: 1 })),
  fusion: Type.Optional(
    Type.Object({
      method: Type.Optional(Type.String()),
      weights: Type.Optional(Type.Record(Type.String(), Type.Number({ minimum: 0 }))),
      rrfK: Type.Optional(Type.Integer({ minimum: 1 })),
      alpha: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    }),
  ),
  rerank: Type.Optional(
    Type.Union([
      Type.Object({
        method: Type.Optional(Type.String()),
        model: Type.Optional(Type.String()),
        topN: Type.Optional(Type.Integer({ minimum: 1 })),
      }),
      Type.Literal(false),
    ]),
  ),
  mmr: Type.Optional(Type.Object({ lambda: Type.Number({ minimum: 0, maximum: 1 }) })),
  rewrite: Type.Optional(Type.Union([Type.String(), Type.Literal(false)])),
  // §8 a filter is an object, compiled by compileFilter; declared so, `filter: null` is absent (§4.6).
  filter: Type.Optional(Type.Object({})),
  minScore: Type.Optional(Type.Number()),
  recency: Type.Optional(Type.Object({ field: Type.String(), halfLifeDays: Type.Number({ exclusiveMinimum: 0 }) })),
  unit: Type.Optional(Type.String()),
  level: Type.Optional(Type.Integer({ minimum: 0 })),
  tokenBudget: Type.Optional(Type.Integer({ minimum: 1 })),
  sessionId: Type.Optional(Type.String({ maxLength: 256 })),
  includeText: Type.Optional(Type.Boolean()),
  includeVectors: Type.Optional(Type.Boolean()),
  encoding: Type.Optional(Type.String()),
  seed: Type.Optional(Type.Integer()),
  indexVersion: Type.Optional(Type.String()),
  strict: Type.Optional(Type.Boolean()),
  cursor: Type.Optional(Type.String({ maxLength: 4096 })),
});
type Params = Static<typeof RetrieveParams>;

export interface RetrieveSettings {
  readonly maxK: number;
  readonly maxCandidates: number;
  readonly candidateK: number;
  readonly defaultMode: Mode;
  readonly fusion: { readonly method: FusionMethod; readonly alpha: number; readonly rrfK: number };
  readonly rerankTopN: number;
  readonly sessionTtlSeconds: number;
  readonly fields: Readonly<Record<string, FieldType>>;
  readonly trust: Readonly<Record<string, TrustLevel>>;
  /** §15.5 bounds on the query and the filter. */
  readonly maxQueryChars: number;
  readonly filterLimits: FilterLimits;
  /** §15.5 the largest answer: hits are built only while they fit. */
  readonly maxResponseBytes: number;
  /** §15.5 hit bytes being built across all requests at once; past it a request is -32011. */
  readonly maxAnswerBytesInFlight: number;
  readonly content: ContentReader;
  /** §6.1 the theoretical minimum of Hit.score, when there is one (advertised for federated convex fusion). */
  readonly scoreFloor?: number | undefined;
}

interface Scored {
  readonly label: number;
  score: number;
  readonly scores: Record<string, number>;
}

/** Options the request asked for that this server cannot honour: -32005 under strict, a usage note otherwise. */
class Leniency {
  readonly notes: string[] = [];
  constructor(private readonly strict: boolean) {}

  unsupported(option: string, value: unknown, fallback: string): void {
    if (this.strict) throw RpcError.optionUnsupported(option, value);
    this.notes.push(`${option}=${JSON.stringify(value)} is not supported; ${fallback}`);
  }
}

const SCORE_FLOOR = { dense: -1, sparse: 0 } as const;

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
  const cursors = new CursorCodec();
  const answers = new AnswerBudget(settings.maxAnswerBytesInFlight);
  const sessions = new SessionDedup(settings.sessionTtlSeconds);
  const capability = {
    maxK: settings.maxK,
    modes: [...MODES],
    fusion: [...FUSIONS],
    mmr: true,
    rerankBuiltin: rerankers.length > 0,
    units: [...UNITS],
    tokenBudget: true,
    defaultMode: settings.defaultMode,
    ...(settings.scoreFloor === undefined ? {} : { scoreFloor: settings.scoreFloor }),
    /** Which index serves `mode: "sparse"`: lexical BM25, not a learned-sparse model. */
    sparse: 'bm25',
  };
  const definition: MethodDefinition<typeof RetrieveParams> = {
    method: 'retrieve',
    params: RetrieveParams,
    handler: (params, ctx) => retrieve(params, ctx),
  };

  async function retrieve(params: Params, ctx: RequestContext): Promise<JsonObject> {
    const started = performance.now();
    const lenient = new Leniency(params.strict !== false);
    corpus.assertVersion(params.indexVersion);
    const indexVersion = corpus.indexVersion;

    // §7.7.1: nothing here is stochastic, so `seed` has nothing to fix; say why results may still move.
    if (params.seed !== undefined) {
      lenient.notes.push(
        'seed: no stochastic step to seed; results are fixed for this indexVersion until the dense index is rebuilt',
      );
    }
    // Options this server does not have.
    if (
      params.rewrite !== undefined &&
      params.rewrite !== false &&
      !['rewrite', 'multi-query'].includes(params.rewrite)
    )
      lenient.unsupported('rewrite', params.rewrite, 'the query was used as given');
    if (params.modality !== undefined && params.modality !== 'text')
      lenient.unsupported('modality', params.modality, 'text was used');
    if (params.level !== undefined && params.level !== 0)
      lenient.unsupported('level', params.level, 'the corpus is flat (level 0)');
    if (params.encoding !== undefined && params.encoding !== 'json')
      lenient.unsupported('encoding', params.encoding, 'hit vectors are JSON numbers');
    let mode: Mode = settings.defaultMode;
    if (params.mode !== undefined) {
      if ((MODES as readonly string[]).includes(params.mode)) mode = params.mode as Mode;
      else lenient.unsupported('mode', params.mode, `mode ${settings.defaultMode} was used`);
    }
    let method: FusionMethod = settings.fusion.method;
    if (params.fusion?.method !== undefined) {
      if ((FUSIONS as readonly string[]).includes(params.fusion.method)) method = params.fusion.method as FusionMethod;
      else lenient.unsupported('fusion.method', params.fusion.method, `${method} was used`);
    }
    let unit: Unit = 'chunk';
    if (params.unit !== undefined) {
      if ((UNITS as readonly string[]).includes(params.unit)) unit = params.unit as Unit;
      else if (params.unit !== 'passage') lenient.unsupported('unit', params.unit, 'chunks were returned');
    }
    let reranker: Reranker | undefined;
    const topNAsked = params.rerank === false ? undefined : params.rerank?.topN;
    if (params.rerank !== false) {
      const wanted = params.rerank?.method;
      reranker =
        wanted === undefined
          ? rerankers.find((r) => r.method === 'cross-encoder')
          : rerankers.find((r) => r.method === wanted);
      if (wanted !== undefined && reranker === undefined)
        lenient.unsupported('rerank.method', wanted, 'no rerank was applied');
      if (reranker !== undefined && params.rerank?.model !== undefined && params.rerank.model !== reranker.model) {
        lenient.unsupported('rerank.model', params.rerank.model, `${reranker.model} was used`);
      }
    }

    // §3.3 funnel: candidateK ≥ rerank.topN ≥ k as asked, then clamped (never an error for being large).
    if (params.candidateK !== undefined && params.candidateK < params.k) {
      throw RpcError.invalidParams('candidateK', `candidateK (${params.candidateK}) must be ≥ k (${params.k}) (§3.3)`);
    }
    if (topNAsked !== undefined && topNAsked < params.k)
      throw RpcError.invalidParams('rerank.topN', `rerank.topN must be ≥ k (§3.3)`);
    if (topNAsked !== undefined && params.candidateK !== undefined && params.candidateK < topNAsked) {
      throw RpcError.invalidParams('candidateK', `candidateK must be ≥ rerank.topN (§3.3)`);
    }
    const k = Math.min(params.k, settings.maxK);
    const candidateK = Math.min(params.candidateK ?? Math.max(k, settings.candidateK), settings.maxCandidates);
    const topN = Math.min(topNAsked ?? Math.max(k, settings.rerankTopN), candidateK);

    const predicate =
      params.filter === undefined
        ? undefined
        : compileFilter(params.filter, settings.fields, OPERATORS, settings.filterLimits);
    if (
      params.recency !== undefined &&
      !(Object.hasOwn(settings.fields, params.recency.field) && settings.fields[params.recency.field] === 'date')
    ) {
      throw RpcError.invalidParams('recency.field', `${params.recency.field} is not a declared date field`);
    }
    const asked = await settings.content.query(params.query, settings.maxQueryChars, ctx.signal);
    const allow = predicate === undefined ? undefined : await corpus.labelsWhere(predicate, ctx.signal);

    // §7.8 inside retrieve, off unless asked: `rewrite` recalls with the rewritten query; `multi-query` keeps dense
    // recall on the query as asked and gives lexical recall the query expanded with every expansion term — RM3's
    // use of pseudo-relevance feedback — so fusion still sees one dense and one sparse list.
    let queries = [asked];
    if (params.rewrite === 'rewrite') queries = await corpus.transformQuery(asked, 'rewrite', 1, ctx.signal);
    const query = queries[0] ?? asked;
    let lexicalQuery = query;
    if (params.rewrite === 'multi-query') {
      const expanded = await corpus.transformQuery(asked, 'multi-query', 3, ctx.signal);
      const terms = expanded.slice(1).map((q) => q.slice(expanded[0]?.length ?? 0).trim());
      lexicalQuery = [expanded[0] ?? asked, ...terms].join(' ');
      lenient.notes.push(`multi-query: lexical recall expanded to ${JSON.stringify(lexicalQuery)}`);
    }

    // Recall.
    const lists: FusionInput[] = [];
    const weights = params.fusion?.weights ?? {};
    let queryVector: Float32Array = new Float32Array(0);
    if (mode !== 'sparse') {
      queryVector = (await encoder.embed([query], 'query', ctx.signal))[0] ?? queryVector;
      const hits = await corpus.searchDense(queryVector, candidateK, allow, ctx.signal, ctx.caller);
      lists.push({ name: 'dense', weight: weights.dense ?? 1, hits, floor: SCORE_FLOOR.dense });
    }
    if (mode !== 'dense') {
      const hits = await corpus.searchLexical(
        lexicalQuery,
        candidateK,
        allow === undefined ? undefined : new Set(allow),
        ctx.signal,
      );
      lists.push({ name: 'sparse', weight: weights.sparse ?? 1, hits, floor: SCORE_FLOOR.sparse });
    }
    // A chunk deleted while recall ran is no candidate (its label could not be named as the client's id).
    for (const [i, list] of lists.entries()) {
      lists[i] = { ...list, hits: list.hits.filter((hit) => corpus.placeOf(hit.label) !== undefined) };
    }
    // Score fusion over the union: a candidate one list missed gets that list's exact score, not nothing, so
    // weighted/convex compare like with like (RRF stays rank-only: a missed candidate has no rank there).
    if (lists.length === 2 && method !== 'rrf') await completeUnion(lists, lexicalQuery, queryVector, ctx.signal);
    ctx.signal.throwIfAborted();
    const recalled = new Set(lists.flatMap((list) => list.hits.map((hit) => hit.label))).size;
    ctx.log('debug', `recall: ${recalled} candidates`, {
      lists: Object.fromEntries(lists.map((list) => [list.name, list.hits.length])),
    });
    ctx.progress('recall', 0.25, {
      message: `${recalled} candidates`,
      partial: {
        hits: (lists[0]?.hits ?? []).slice(0, k).map((hit) => ({ id: hitId(hit.label, 'chunk'), score: hit.score })),
      },
    });

    // Fusion (hybrid) or the single list.
    let ranked: Scored[];
    if (lists.length === 1) {
      const [only] = lists;
      ranked = (only?.hits ?? []).map((hit) => ({
        label: hit.label,
        score: hit.score,
        scores: { [only?.name ?? 'dense']: hit.score },
      }));
    } else {
      // §16.3 ties break on the stringified hit id, as the client will see it.
      const idOf = (label: number) => hitId(label, unit);
      const fused: FusedHit[] =
        method === 'rrf'
          ? rrf(lists, params.fusion?.rrfK ?? settings.fusion.rrfK, idOf)
          : method === 'weighted'
            ? weighted(lists, idOf)
            : convex(lists, params.fusion?.alpha ?? settings.fusion.alpha, idOf);
      ranked = fused
        .slice(0, candidateK)
        .map((hit) => ({ label: hit.label, score: hit.score, scores: { ...hit.scores, fused: hit.score } }));
      ctx.progress('fuse', 0.45, { message: `${method} over ${lists.length} lists` });
    }

    // Recency: halve the score every halfLifeDays of age; undated documents keep theirs.
    if (params.recency !== undefined) {
      const { field, halfLifeDays } = params.recency;
      const now = Date.now();
      for (const hit of ranked) {
        const value = corpus.metaOf(documentIdOf(hit.label))[field];
        const time = typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : NaN;
        if (Number.isNaN(time)) continue;
        const decay = 0.5 ** (Math.max(0, now - time) / 86_400_000 / halfLifeDays);
        hit.scores.recency = decay;
        hit.score *= decay;
      }
      ranked.sort((a, b) => b.score - a.score || a.label - b.label);
    }
    ctx.signal.throwIfAborted();

    // The rerank funnel: the top topN rescored; the rest keep their order behind them.
    let reranked = 0;
    if (reranker !== undefined && ranked.length > 0) {
      const head = ranked.slice(0, topN);
      const texts = head.map((hit) => corpus.getChunk(hit.label)?.text ?? '');
      const scores = await reranker.score(query, texts, ctx.signal);
      head.forEach((hit, i) => {
        hit.score = scores[i] ?? 0;
        hit.scores.rerank = hit.score;
      });
      head.sort((a, b) => b.score - a.score || a.label - b.label);
      ranked = [...head, ...ranked.slice(topN)];
      reranked = head.length;
      ctx.progress('rerank', 0.7, { message: `reranked ${reranked} with ${reranker.method}` });
      ctx.log('debug', `reranked ${reranked} with ${reranker.method}`, { model: reranker.model });
    }

    if (params.minScore !== undefined) ranked = ranked.filter((hit) => hit.score >= (params.minScore ?? -Infinity));
    if (unit === 'document') {
      const seen = new Set<string>();
      ranked = ranked.filter((hit) => {
        const doc = documentIdOf(hit.label);
        return !seen.has(doc) && seen.add(doc) !== undefined;
      });
    }
    // §10 pagination over this deterministic ranking of one snapshot.
    const digest = requestDigest(params);
    const resumed = params.cursor === undefined ? undefined : cursors.decode(params.cursor, digest, indexVersion);
    const offset = resumed?.offset ?? 0;
    // §7.7.3 hits the session returned before this pagination's first page are skipped; its own pages are not.
    const seen =
      params.sessionId === undefined ? undefined : sessions.seen(ctx.caller, params.sessionId, resumed?.seenMark);
    if (seen !== undefined) ranked = ranked.filter((hit) => !seen.has(hitId(hit.label, unit)));
    if (params.mmr !== undefined) {
      // A stored vector per candidate (up to maxCandidates store reads): read in time slices.
      const slice = new TimeSlice(8, ctx.signal);
      const candidates: MmrCandidate[] = [];
      for (const hit of ranked) {
        candidates.push({ score: hit.score, vector: corpus.vectorOf(hit.label) ?? new Float32Array(0) });
        await slice.due();
      }
      const order = await mmr(candidates, offset + k, params.mmr.lambda, ctx.signal);
      ranked = order.map((i) => ranked[i]!);
    }
    let page = ranked.slice(offset, offset + k);

    // Packing and building hits read a stored text per hit: in time slices.
    const building = new TimeSlice(8, ctx.signal);
    // §7.7.2 token budget: best hits first while their bodies fit.
    let tokens: number | undefined;
    if (params.tokenBudget !== undefined) {
      tokens = 0;
      const packed: Scored[] = [];
      for (const hit of page) {
        const size = await encoder.tokenCount(bodyOf(hit.label, unit), building);
        if (tokens + size > params.tokenBudget) break;
        tokens += size;
        packed.push(hit);
        await building.due();
      }
      page = packed;
    }
    ctx.progress('pack', 0.9, { message: `${page.length} hits` });

    // §15.5: hits (texts of up to a document each) are built only while the answer stays within its cap.
    // Hits in flight across all requests share one budget (-32011 past it).
    const hits: JsonObject[] = [];
    let bytes = 0;
    const reservation = answers.open();
    try {
      for (const hit of page) {
        const built = buildHit(hit, unit, params);
        if (built === undefined) continue; // deleted since recall
        const size = approximateBytes(built);
        bytes += size;
        if (bytes > settings.maxResponseBytes) throw answerTooLarge(settings.maxResponseBytes);
        reservation.take(size);
        hits.push(built);
        await building.due();
      }
    } finally {
      reservation.release();
    }
    if (params.sessionId !== undefined)
      sessions.remember(
        ctx.caller,
        params.sessionId,
        hits.map((hit) => String(hit.id)),
      );
    const next = offset + page.length;
    const more = params.tokenBudget === undefined && next < ranked.length && page.length > 0;
    const usage: JsonObject = {
      candidates: recalled,
      reranked,
      latencyMs: Math.round(performance.now() - started),
      ...(tokens === undefined ? {} : { tokens }),
      ...(lenient.notes.length > 0 ? { notes: lenient.notes } : {}),
    };
    for (const note of lenient.notes) ctx.log('notice', note);
    ctx.log(
      'info',
      `${hits.length} hits from ${recalled} candidates (${mode}${lists.length > 1 ? `, ${method}` : ''})`,
      {
        latencyMs: usage.latencyMs as number,
      },
    );
    return {
      hits,
      indexVersion,
      ...(more
        ? { nextCursor: cursors.encode({ offset: next, indexVersion, request: digest, seenMark: seen?.mark }) }
        : {}),
      ...(params.rewrite === 'rewrite' ? { rewrittenQuery: query } : {}),
      usage,
    };
  }

  async function completeUnion(
    lists: FusionInput[],
    query: string,
    vector: Float32Array,
    signal: AbortSignal,
  ): Promise<void> {
    const union = [...new Set(lists.flatMap((list) => list.hits.map((hit) => hit.label)))];
    for (const [i, list] of lists.entries()) {
      const present = new Set(list.hits.map((hit) => hit.label));
      const missing = union.filter((label) => !present.has(label));
      const scores =
        list.name === 'dense'
          ? await corpus.denseScores(vector, missing, signal)
          : await corpus.lexicalScores(query, missing, signal);
      lists[i] = {
        ...list,
        hits: [...list.hits, ...missing.map((label, j) => ({ label, score: scores[j] ?? list.floor }))],
      };
    }
  }

  function documentIdOf(label: number): string {
    return corpus.placeOf(label)?.docId ?? '';
  }

  /** A hit's id: the client's document id, and for a chunk its place in the document. */
  function idAt(place: { readonly docId: string; readonly ordinal: number }, unit: Unit): string {
    return unit === 'document' ? place.docId : `${place.docId}#${place.ordinal}`;
  }

  /** The id of a recalled label; '' only for a chunk deleted since (never emitted: such a hit is not built). */
  function hitId(label: number, unit: Unit): string {
    const place = corpus.placeOf(label);
    return place === undefined ? '' : idAt(place, unit);
  }

  function bodyOf(label: number, unit: Unit, chunk = corpus.getChunk(label)): string {
    if (chunk === undefined) return '';
    return unit === 'document' ? (corpus.getDocument(chunk.docId)?.text ?? chunk.text) : chunk.text;
  }

  /**
   * §15.2: trust comes only from the operator's per-source configuration, and text a client wrote over the wire is
   * never `trusted` (at most `community`), whatever its claimed source; only operator-ingested text can be.
   */
  function trustOf(source: string, origin: 'client' | 'operator'): TrustLevel {
    const level = (Object.hasOwn(settings.trust, source) ? settings.trust[source] : undefined) ?? 'untrusted';
    return level === 'trusted' && origin === 'client' ? 'community' : level;
  }

  /** The hit for a ranked chunk, or undefined when it has been deleted since recall. */
  function buildHit(hit: Scored, unit: Unit, params: Params): JsonObject | undefined {
    const chunk = corpus.getChunk(hit.label);
    if (chunk === undefined) return undefined;
    const meta = corpus.metaOf(chunk.docId);
    const source = typeof meta.source === 'string' ? meta.source : chunk.docId;
    // §7.7 citation offsets: the chunk is a verbatim slice of its document.
    const citation: JsonObject = { source, start: chunk.start, end: chunk.end };
    if (typeof meta.title === 'string') citation.title = meta.title;
    if (typeof meta.uri === 'string') citation.uri = meta.uri;
    const body: JsonObject = {
      id: idAt(chunk, unit),
      score: hit.score,
      unit,
      scores: hit.scores,
      meta,
      citation,
      chunk: { docId: chunk.docId, index: chunk.ordinal, ...(chunk.context === '' ? {} : { context: chunk.context }) },
      trust: { level: trustOf(source, corpus.originOf(chunk.docId)) },
    };
    if (params.includeText !== false) body.text = bodyOf(hit.label, unit, chunk);
    if (params.includeVectors === true) body.vector = Array.from(corpus.vectorOf(hit.label) ?? []);
    return body;
  }

  return [definition, capability];
}
