import { readablePrefix, type Encoder, type TokenMatrix } from '../models/index.js';
import { RpcError } from '../protocol/errors.js';
import { TimeSlice } from '../protocol/time-slice.js';
import type { JsonObject } from '../protocol/messages.js';
import type { MethodDefinition } from '../protocol/registry.js';
import { EmbedMultiParams } from '../protocol/schemas/params.js';
import type { ContentReader } from './content.js';
import { batchOf } from './embed.js';
import { batchProgress } from './progress.js';

/**
 * Only JSON numbers. §7.3.1 says its `encoding` applies to `embed/multi` too, but the normative MultiVectorResult
 * (rcp-1.0.json) allows `matrices` of JSON number rows only, with no `encoding` field: an `f32-base64` answer would
 * break the schema every client validates against, so that value is -32005 (OptionUnsupported), as §7.3.1 has it for
 * an encoding not served.
 */
export const MULTI_ENCODINGS = ['json'] as const;

/**
 * The most bytes one float takes in the answer: a float32 widened to a double prints in up to 17 significant digits
 * with sign, point and exponent (`-1.2345678901234567e-7`), then a comma. Used to refuse an answer past
 * `limits.maxResponseBytes` before it is built.
 */
const JSON_BYTES_PER_FLOAT = 24;
/** The most bytes one row's `[start,end]` pair takes (two offsets under 10^7, brackets, commas). */
const JSON_BYTES_PER_OFFSETS = 20;

export interface EmbedMultiLimits {
  /** Most inputs per call, as `embed.batchLimit`; more is -32013 PayloadTooLarge. */
  readonly batchLimit: number;
  /** `limits.maxResponseBytes`: matrices that would take more as JSON are -32013 before they are built (§15.5). */
  readonly maxResponseBytes: number;
  readonly content: ContentReader;
}

type TokenEncoder = Pick<Required<Encoder>, 'info' | 'embedTokens' | 'tokenCounter'>;

/**
 * `embed/multi` (§7.5) over the encoder's contextual token vectors: one matrix per input, a row per token the model
 * saw (padding excluded; truncated to its `maxTokens`). The rows are the model's own, not normalised: `similarity:
 * "cosine"` is what the `colbert` rerank's MaxSim kernel computes over them (models/onnx/maxsim.ts normalises each
 * row), so a client scoring MaxSim with cosine over these matrices — query with kind "query", passages with kind
 * "document", as the rerank embeds them — gets the rerank's scores. Where the encoder can say which characters of
 * the input each row stands for, the answer carries them as `x-rcp-server-offsets` (§6.2): per matrix, per row,
 * `[start, end)` in UTF-16 code units of the input text, so rows map onto a hit's `citation.start/end`.
 */
export function embedMultiMethod(
  encoder: TokenEncoder,
  limits: EmbedMultiLimits,
): [MethodDefinition<typeof EmbedMultiParams>, JsonObject] {
  const { dimension, identity } = encoder.info;
  const capability = { dimension, identity, similarity: 'cosine' };
  const definition: MethodDefinition<typeof EmbedMultiParams> = {
    method: 'embed/multi',
    params: EmbedMultiParams,
    options: [{ path: 'encoding', supported: MULTI_ENCODINGS }],
    handler: async (params, ctx) => {
      const { field, inputs } = batchOf(params, limits.batchLimit);
      const texts = await limits.content.texts(inputs, field, ctx.signal);
      // §15.5: an answer too large is refused before the model runs, from the rows the tokenizer says it will make.
      withinAnswer(await rowCounts(encoder, texts, ctx.signal), dimension, limits.maxResponseBytes);
      // §9: a frame per model batch of texts embedded (stage `embed`).
      const progress = batchProgress(ctx, 'embed', 'embedded');
      const matrices = await encoder.embedTokens(texts, params.kind, ctx.signal, ctx.caller, progress);
      withinAnswer(
        matrices.map((matrix) => matrix.rows),
        dimension,
        limits.maxResponseBytes,
      );
      const offsets = matrices.every((matrix) => matrix.offsets !== undefined)
        ? { 'x-rcp-server-offsets': matrices.map((matrix) => pairs(matrix.offsets!)) }
        : {};
      return { matrices: matrices.map(rows), dimension, ...offsets };
    },
  };
  return [definition, capability];
}

/**
 * The rows each text will make: its tokens as the encoder counts them (special tokens included), in the part of it the
 * encoder reads, at most `maxTokens`; counted in time slices. The prefix of a `kind` (e5) is not counted: the check
 * after the model runs counts it.
 */
async function rowCounts(encoder: TokenEncoder, texts: readonly string[], signal: AbortSignal): Promise<number[]> {
  const count = await encoder.tokenCounter();
  const { maxTokens } = encoder.info;
  const slice = new TimeSlice(signal);
  const rows: number[] = [];
  for (const text of texts) {
    rows.push(Math.min(maxTokens, count(readablePrefix(text, maxTokens))));
    await slice.due();
  }
  return rows;
}

/** -32013 when matrices of these rows would take more than `maxBytes` as JSON, counted before any is built. */
function withinAnswer(rows: readonly number[], dimension: number, maxBytes: number): void {
  const rowCount = rows.reduce((sum, count) => sum + count, 0);
  const floats = rowCount * dimension;
  const bytes = floats * JSON_BYTES_PER_FLOAT + rowCount * JSON_BYTES_PER_OFFSETS;
  if (bytes <= maxBytes) return;
  throw RpcError.payloadTooLarge(
    `${rows.length} matrices of ${rowCount} token rows in all (${floats} floats) may take up to ${bytes} bytes as ` +
      `JSON, past the ${maxBytes}-byte answer limit (limits.maxResponseBytes): send fewer or shorter inputs`,
  );
}

/** A matrix as JSON rows. */
function rows(matrix: TokenMatrix): number[][] {
  const out: number[][] = [];
  for (let row = 0; row < matrix.rows; row++) {
    out.push(Array.from(matrix.data.subarray(row * matrix.dimension, (row + 1) * matrix.dimension)));
  }
  return out;
}

/** Flat `[start, end, start, end, …]` as `[[start, end], …]`. */
function pairs(flat: Uint32Array): number[][] {
  const out: number[][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
}
