import { TimeSlice } from '../protocol/time-slice.js';
import type { CorpusReader } from '../corpus/index.js';
import type { TextKind } from '../models/index.js';
import { RpcError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/messages.js';
import type { MethodDefinition } from '../protocol/registry.js';
import { EmbedSparseParams } from '../protocol/schemas/params.js';
import type { ContentReader } from './content.js';

/**
 * `embed/sparse` (§7.4) from the lexical index — honest about what it is: not a learned (SPLADE) model but BM25's
 * own term weights, over a stable hashed vocabulary. A query vector weighs each distinct analyzed term 1; a document
 * vector weighs each term with BM25's document side under the corpus's current statistics (N, df, avgdl), so
 * dot(query, document) is the document's BM25 score — what `retrieve mode:"sparse"` ranks by. Indices are FNV-1a
 * hashes of the analyzed (folded, stemmed) terms modulo 2^24: stable across restarts, corpora and versions; two
 * terms that collide share an index (their weights add). `kind` absent means document.
 */
export const SPARSE_VOCABULARY = 2 ** 24;

export interface SparseSettings {
  readonly batchLimit: number;
  readonly content: ContentReader;
  /** What the weights are: analyzer and BM25 parameters, so a change of either changes the identity. */
  readonly bm25: { readonly k1: number; readonly b: number; readonly stem: boolean };
  /** Largest text, in UTF-8 bytes (the corpus's own document bound); a larger one is -32602 naming it (§15.5). */
  readonly maxTextBytes: number;
}

/** 32-bit FNV-1a over the UTF-8 bytes of a term. */
export function termIndex(term: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(term, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % SPARSE_VOCABULARY;
}

export function sparseVector(weights: ReadonlyMap<string, number>): { indices: number[]; values: number[] } {
  const merged = new Map<number, number>();
  for (const [term, weight] of weights) {
    const index = termIndex(term);
    merged.set(index, (merged.get(index) ?? 0) + weight);
  }
  const indices = [...merged.keys()].sort((a, b) => a - b);
  return { indices, values: indices.map((index) => merged.get(index) ?? 0) };
}

export function embedSparseMethod(
  corpus: CorpusReader,
  settings: SparseSettings,
): [MethodDefinition<typeof EmbedSparseParams>, JsonObject] {
  const { k1, b, stem } = settings.bm25;
  const capability = {
    identity: `rcp-server/bm25-term-weights@1 (fnv1a mod 2^24; ${stem ? 'porter-stemmed' : 'unstemmed'} folded terms; k1 ${k1}, b ${b})`,
    vocabulary: SPARSE_VOCABULARY,
  };
  const definition: MethodDefinition<typeof EmbedSparseParams> = {
    method: 'embed/sparse',
    params: EmbedSparseParams,
    handler: async (params, ctx) => {
      const field = params.texts !== undefined ? 'texts' : 'inputs';
      const inputs = params.texts ?? params.inputs;
      if (inputs === undefined) throw RpcError.invalidParams('texts', 'required (or inputs)');
      if (inputs.length > settings.batchLimit) {
        throw RpcError.payloadTooLarge(`${inputs.length} texts exceed the batch limit ${settings.batchLimit}`, field);
      }
      const kind: TextKind = params.kind ?? 'document';
      const texts = await settings.content.texts(inputs, field, ctx.signal);
      // Analysis is CPU work on the event loop: one text at a time, in time slices (a batch may be 256 long texts).
      const slice = new TimeSlice(ctx.signal);
      const sparse = [];
      for (const [i, text] of texts.entries()) {
        const bytes = Buffer.byteLength(text);
        if (bytes > settings.maxTextBytes) {
          throw RpcError.invalidParams(
            `${field}.${i}`,
            `${bytes} bytes exceed the ${settings.maxTextBytes}-byte limit`,
          );
        }
        sparse.push(sparseVector(await corpus.termWeights(text, kind, ctx.signal)));
        await slice.due();
      }
      return { sparse };
    },
  };
  return [definition, capability];
}
