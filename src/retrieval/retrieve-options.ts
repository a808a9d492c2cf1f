import type { FieldType } from '../corpus/index.js';
import { RpcError } from '../protocol/errors.js';
import { compileFilter, OPERATORS, type FilterLimits, type Predicate } from './filter.js';
import type { FusionMethod } from './fusion.js';

/**
 * `retrieve` (§7.7) options as asked, resolved to what this server will do: the strict rule for options it cannot
 * honour, the §3.3 funnel sizes, the compiled filter (§8) and the recency field. Every option error a request can
 * earn before recall is raised here, in the order the wire has always seen them.
 */
export const MODES = ['dense', 'sparse', 'hybrid'] as const;
export const FUSIONS = ['rrf', 'weighted', 'convex'] as const;
export const UNITS = ['chunk', 'passage', 'page', 'document'] as const;
export type Mode = (typeof MODES)[number];
export type Unit = (typeof UNITS)[number];

/** Options the request asked for that this server cannot honour: -32005 under strict, a usage note otherwise. */
export class Leniency {
  readonly notes: string[] = [];
  constructor(private readonly strict: boolean) {}

  unsupported(option: string, value: unknown, fallback: string): void {
    if (this.strict) throw RpcError.optionUnsupported(option, value);
    this.notes.push(`${option}=${JSON.stringify(value)} is not supported; ${fallback}`);
  }
}

/** What option resolution reads of a retrieve request (the method's params, structurally). */
export interface RetrieveOptions {
  readonly k: number;
  readonly mode?: string | undefined;
  readonly modality?: string | undefined;
  readonly candidateK?: number | undefined;
  readonly fusion?:
    | {
        readonly method?: string | undefined;
        readonly weights?: Readonly<Record<string, number>> | undefined;
        readonly rrfK?: number | undefined;
        readonly alpha?: number | undefined;
      }
    | undefined;
  readonly rerank?:
    | { readonly method?: string | undefined; readonly model?: string | undefined; readonly topN?: number | undefined }
    | false
    | undefined;
  readonly rewrite?: string | false | undefined;
  readonly filter?: unknown;
  readonly recency?: { readonly field: string; readonly halfLifeDays: number } | undefined;
  readonly unit?: string | undefined;
  readonly level?: number | undefined;
  readonly encoding?: string | undefined;
  readonly seed?: number | undefined;
  readonly strict?: boolean | undefined;
}

/** The server's side of option resolution: its defaults and bounds. */
export interface OptionSettings {
  readonly maxK: number;
  readonly maxCandidates: number;
  readonly candidateK: number;
  readonly defaultMode: Mode;
  readonly fusion: { readonly method: FusionMethod; readonly alpha: number; readonly rrfK: number };
  readonly rerankTopN: number;
  /** `rerank.maxCandidates` (§6): the most candidates one request's rerank stage scores. */
  readonly rerankMaxCandidates: number;
  readonly fields: Readonly<Record<string, FieldType>>;
  readonly filterLimits: FilterLimits;
}

/** A reranker as option resolution sees it: what `rerank.method` and `rerank.model` are matched against. */
export interface NamedReranker {
  readonly method: string;
  readonly model: string;
}

export interface FusionPlan {
  readonly method: FusionMethod;
  readonly weights: Readonly<Record<string, number>>;
  readonly rrfK: number;
  readonly alpha: number;
}

/** §3.3 the funnel's effective sizes: candidateK ≥ topN ≥ k, each clamped. */
export interface FunnelSizes {
  readonly k: number;
  readonly candidateK: number;
  readonly topN: number;
}

export interface ResolvedOptions<R extends NamedReranker> extends FunnelSizes {
  readonly mode: Mode;
  readonly fusion: FusionPlan;
  readonly unit: Unit;
  /** The reranker of the funnel; undefined with `rerank: false` or when none fits (noted under strict false). */
  readonly reranker: R | undefined;
  readonly predicate: Predicate | undefined;
  /**
   * §7.7.1 `seed` given: the dense list is scored exactly over every vector, not searched in the HNSW graph, whose
   * shape depends on how each process built it; the rest of the pipeline is deterministic already.
   */
  readonly exact: boolean;
  /** Notes for `usage.notes` (§7.7): later stages add theirs. */
  readonly notes: string[];
}

/** Resolves a request's options, or throws -32005 (strict, §7.7) / -32602 (§3.3 funnel, §8 filter, recency.field). */
export function resolveOptions<R extends NamedReranker>(
  params: RetrieveOptions,
  settings: OptionSettings,
  rerankers: readonly R[],
): ResolvedOptions<R> {
  const lenient = new Leniency(params.strict !== false);
  // §7.7.1: the one step whose result depends on more than the indexVersion is the ANN search (the graph a process
  // built or loaded); with a seed it is replaced by an exact scan, so any process at this indexVersion answers alike.
  const exact = params.seed !== undefined;
  if (exact) lenient.notes.push('seed: the dense list was scored exactly over every vector (no ANN search)');
  unsupportedOptions(params, lenient);
  const mode = chosen(MODES, params.mode, settings.defaultMode, (asked) =>
    lenient.unsupported('mode', asked, `mode ${settings.defaultMode} was used`),
  );
  const method = chosen(FUSIONS, params.fusion?.method, settings.fusion.method, (asked) =>
    lenient.unsupported('fusion.method', asked, `${settings.fusion.method} was used`),
  );
  const unit = chosen(UNITS, params.unit, 'chunk', (asked) =>
    lenient.unsupported('unit', asked, 'chunks were returned'),
  );
  const reranker = chooseReranker(params.rerank, rerankers, lenient);
  const sizes = funnelSizes(params, settings);
  const predicate =
    params.filter === undefined
      ? undefined
      : compileFilter(params.filter, settings.fields, OPERATORS, settings.filterLimits);
  checkRecencyField(params.recency, settings.fields);
  const fusion: FusionPlan = {
    method,
    weights: params.fusion?.weights ?? {},
    rrfK: params.fusion?.rrfK ?? settings.fusion.rrfK,
    alpha: params.fusion?.alpha ?? settings.fusion.alpha,
  };
  return { ...sizes, mode, fusion, unit, reranker, predicate, exact, notes: lenient.notes };
}

/** Options this server does not have at all. */
function unsupportedOptions(params: RetrieveOptions, lenient: Leniency): void {
  if (params.rewrite !== undefined && params.rewrite !== false && !['rewrite', 'multi-query'].includes(params.rewrite))
    lenient.unsupported('rewrite', params.rewrite, 'the query was used as given');
  if (params.modality !== undefined && params.modality !== 'text')
    lenient.unsupported('modality', params.modality, 'text was used');
  if (params.level !== undefined && params.level !== 0)
    lenient.unsupported('level', params.level, 'the corpus is flat (level 0)');
  if (params.encoding !== undefined && params.encoding !== 'json')
    lenient.unsupported('encoding', params.encoding, 'hit vectors are JSON numbers');
}

/** The asked value when it is one of `allowed`; else `fallback`, after `refuse` (which throws under strict). */
function chosen<T extends string>(
  allowed: readonly T[],
  asked: string | undefined,
  fallback: T,
  refuse: (asked: string) => void,
): T {
  if (asked === undefined) return fallback;
  if ((allowed as readonly string[]).includes(asked)) return asked as T;
  refuse(asked);
  return fallback;
}

/** `rerank.method` picks among the rerankers (the cross-encoder by default); `rerank: false` turns the stage off. */
function chooseReranker<R extends NamedReranker>(
  rerank: RetrieveOptions['rerank'],
  rerankers: readonly R[],
  lenient: Leniency,
): R | undefined {
  if (rerank === false) return undefined;
  const wanted = rerank?.method;
  const reranker =
    wanted === undefined
      ? rerankers.find((r) => r.method === 'cross-encoder')
      : rerankers.find((r) => r.method === wanted);
  if (wanted !== undefined && reranker === undefined)
    lenient.unsupported('rerank.method', wanted, 'no rerank was applied');
  if (reranker !== undefined && rerank?.model !== undefined && rerank.model !== reranker.model) {
    lenient.unsupported('rerank.model', rerank.model, `${reranker.model} was used`);
  }
  return reranker;
}

/**
 * §3.3 funnel: candidateK ≥ rerank.topN ≥ k as asked, then clamped (never an error for being large): §7.7 clamps
 * topN to `rerank.maxCandidates` as the `rerank` method bounds its passages (a colbert stage over 1,000 candidates
 * cost 15-19 s of the server's CPU where 256 cost a quarter of that); `usage.reranked` reports what ran.
 */
export function funnelSizes(
  params: Pick<RetrieveOptions, 'k' | 'candidateK' | 'rerank'>,
  settings: Pick<OptionSettings, 'maxK' | 'maxCandidates' | 'candidateK' | 'rerankTopN' | 'rerankMaxCandidates'>,
): FunnelSizes {
  const topNAsked = params.rerank === false ? undefined : params.rerank?.topN;
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
  const topN = Math.min(topNAsked ?? Math.max(k, settings.rerankTopN), candidateK, settings.rerankMaxCandidates);
  return { k, candidateK, topN };
}

/** Recency decays by a date field's age, so the field must be a declared `date`. */
function checkRecencyField(recency: RetrieveOptions['recency'], fields: Readonly<Record<string, FieldType>>): void {
  if (recency !== undefined && !(Object.hasOwn(fields, recency.field) && fields[recency.field] === 'date')) {
    throw RpcError.invalidParams('recency.field', `${recency.field} is not a declared date field`);
  }
}
