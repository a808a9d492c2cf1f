import type { CorpusReader } from '../corpus/index.js';
import type { Encoder } from '../models/index.js';
import type { RequestContext } from '../protocol/context.js';
import { stage } from '../protocol/tracing.js';
import { SCORE_FLOOR, type FusionInput } from './fusion.js';
import { chunkId } from './hits.js';
import type { RecallQueries } from './query-plan.js';
import type { FusionPlan, Mode } from './retrieve-options.js';

export type RecallCorpus = Pick<
  CorpusReader,
  'searchDense' | 'searchLexical' | 'denseScores' | 'lexicalScores' | 'placeOf'
>;

/** What recall runs: which lists, on which queries, how wide, restricted to which labels (§8 filter). */
export interface RecallPlan extends RecallQueries {
  readonly mode: Mode;
  readonly fusion: Pick<FusionPlan, 'method' | 'weights'>;
  readonly candidateK: number;
  /** How many of the first list's hits the §9 progress partial shows. */
  readonly k: number;
  /** Labels the filter lets through; undefined without a filter. */
  readonly allow: readonly number[] | undefined;
  /** §7.7.1: the dense list scored exactly over every vector (a `seed` was given), not searched in the graph. */
  readonly exact?: boolean | undefined;
}

export interface Recalled {
  readonly lists: FusionInput[];
  /** Distinct candidates over all lists (`usage.candidates`). */
  readonly candidates: number;
}

/**
 * Recall (§7.7): dense HNSW and/or sparse BM25, each `candidateK` wide and filtered during recall; chunks deleted
 * meanwhile dropped; for weighted/convex fusion of two lists, each list completed over the union (§16.3).
 */
export async function recall(
  corpus: RecallCorpus,
  encoder: Pick<Encoder, 'embed'>,
  plan: RecallPlan,
  ctx: Pick<RequestContext, 'signal' | 'caller' | 'log' | 'progress'>,
): Promise<Recalled> {
  const lists: FusionInput[] = [];
  const weights = plan.fusion.weights;
  let queryVector: Float32Array = new Float32Array(0);
  // The dense list is embedded and searched in worker threads while BM25 scores on this one: started first, awaited
  // after, and listed first either way (fusion's order).
  const dense =
    plan.mode === 'sparse'
      ? undefined
      : (async () => {
          queryVector = (await encoder.embed([plan.query], 'query', ctx.signal, ctx.caller))[0] ?? queryVector;
          const exact = plan.exact === true;
          const hits = await stage('hnsw.search', { 'rcp.k': plan.candidateK, 'rcp.exact': exact }, () =>
            corpus.searchDense(queryVector, plan.candidateK, plan.allow, ctx.signal, ctx.caller, { exact }),
          );
          return { name: 'dense', weight: weights.dense ?? 1, hits, floor: SCORE_FLOOR.dense };
        })();
  // A dense failure is awaited below; until then it must not count as unhandled.
  dense?.catch(() => undefined);
  let sparse: FusionInput | undefined;
  if (plan.mode !== 'dense') {
    const allow = plan.allow === undefined ? undefined : new Set(plan.allow);
    const hits = await stage('bm25.search', { 'rcp.k': plan.candidateK }, () =>
      corpus.searchLexical(plan.lexicalQuery, plan.candidateK, allow, ctx.signal),
    );
    sparse = { name: 'sparse', weight: weights.sparse ?? 1, hits, floor: SCORE_FLOOR.sparse };
  }
  if (dense !== undefined) lists.push(await dense);
  if (sparse !== undefined) lists.push(sparse);
  // A chunk deleted while recall ran is no candidate (its label could not be named as the client's id).
  for (const [i, list] of lists.entries()) {
    lists[i] = { ...list, hits: list.hits.filter((hit) => corpus.placeOf(hit.label) !== undefined) };
  }
  // Score fusion over the union: a candidate one list missed gets that list's exact score, not nothing, so
  // weighted/convex compare like with like (RRF stays rank-only: a missed candidate has no rank there).
  if (lists.length === 2 && plan.fusion.method !== 'rrf') {
    await stage('recall.union', {}, () => completeUnion(corpus, lists, plan.lexicalQuery, queryVector, ctx.signal));
  }
  ctx.signal.throwIfAborted();
  const candidates = new Set(lists.flatMap((list) => list.hits.map((hit) => hit.label))).size;
  ctx.log('debug', `recall: ${candidates} candidates`, {
    lists: Object.fromEntries(lists.map((list) => [list.name, list.hits.length])),
  });
  ctx.progress('recall', 0.25, {
    message: `${candidates} candidates`,
    partial: {
      hits: (lists[0]?.hits ?? [])
        .slice(0, plan.k)
        .map((hit) => ({ id: chunkId(corpus, hit.label), score: hit.score })),
    },
  });
  return { lists, candidates };
}

/**
 * §16.3 fusion over the union: every list gets the exact score of each candidate it missed (the list's floor when
 * none comes back), appended after its own hits so its ranks are unchanged. Replaces the lists in place.
 */
export async function completeUnion(
  corpus: Pick<CorpusReader, 'denseScores' | 'lexicalScores'>,
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
