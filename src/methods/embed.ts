import type { Encoder } from '../models/index.js';
import { RpcError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/messages.js';
import type { MethodDefinition } from '../protocol/registry.js';
import { EmbedParams } from '../protocol/schemas/params.js';
import { encodeF32Base64 } from '../protocol/vectors.js';
import type { ContentReader } from './content.js';
import { batchProgress } from './progress.js';

export const EMBED_ENCODINGS = ['json', 'f32-base64'] as const;

export interface EmbedLimits {
  /** Most inputs per call; more is -32013 PayloadTooLarge (§12: "batch size, inputs count"). */
  readonly batchLimit: number;
  /** Reads inputs (a `uri` only under the fetch policy, §15.5). */
  readonly content: ContentReader;
}

/** `embed` (§7.3, §7.3.1) over one encoder; returns the definition and the capability it advertises. */
export function embedMethod(encoder: Encoder, limits: EmbedLimits): [MethodDefinition<typeof EmbedParams>, JsonObject] {
  const capability = {
    dimension: encoder.info.dimension,
    identity: encoder.info.identity,
    batchLimit: limits.batchLimit,
    normalized: encoder.info.normalized,
    encodings: [...EMBED_ENCODINGS],
  };
  const definition: MethodDefinition<typeof EmbedParams> = {
    method: 'embed',
    params: EmbedParams,
    // §7.3.1: an unadvertised encoding is -32005.
    options: [{ path: 'encoding', supported: EMBED_ENCODINGS }],
    handler: async (params, ctx) => {
      const { field, inputs } = batchOf(params, limits.batchLimit);
      const texts = await limits.content.texts(inputs, field, ctx.signal);
      // §9: a frame per model batch of texts embedded (stage `embed`).
      const progress = batchProgress(ctx, 'embed', 'embedded');
      const vectors = await encoder.embed(texts, params.kind, ctx.signal, ctx.caller, progress);
      if (params.encoding === 'f32-base64') {
        // §7.3.1: echo the encoding used, with the dimension each blob decodes to.
        return {
          vectors: vectors.map(encodeF32Base64),
          encoding: 'f32-base64',
          dimension: encoder.info.dimension,
        };
      }
      return { vectors: vectors.map((vector) => Array.from(vector)) };
    },
  };
  return [definition, capability];
}

/**
 * The inputs of an `embed` or `embed/multi` call and the field they came in: `inputs`, or its legacy name `texts`
 * (§7.3); -32602 with neither, -32013 past `embed.batchLimit` (§12: "batch size, inputs count").
 */
export function batchOf<T>(
  params: { readonly inputs?: T[] | undefined; readonly texts?: T[] | undefined },
  batchLimit: number,
): { field: 'inputs' | 'texts'; inputs: T[] } {
  const field = params.inputs !== undefined ? 'inputs' : 'texts';
  const inputs = params.inputs ?? params.texts;
  if (inputs === undefined) throw RpcError.invalidParams('inputs', 'required (or its legacy name texts)');
  if (inputs.length > batchLimit) {
    throw RpcError.payloadTooLarge(`${inputs.length} inputs exceed embed.batchLimit ${batchLimit}`, field);
  }
  return { field, inputs };
}
