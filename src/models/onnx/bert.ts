import type { QueueItem, QueueOptions } from '../inference-queue.js';
import { modelIdentity, type ModelManifest } from '../manifest.js';
import type { BatchProgress, CrossEncoder, CrossEncoderInfo, TextKind } from '../ports.js';
import { TimeSlice } from '../../protocol/time-slice.js';
import { HuggingFaceTokenizer, type EncodedText } from '../tokenizers/huggingface.js';
import { readablePrefix } from '../tokenizers/readable-prefix.js';
import { HostedEncoder, HostedModel, type EncoderOutput } from './hosted-model.js';
import { ort, type RuntimeOptions } from './model-host.js';

/**
 * BERT-family ONNX models (bge, e5, MiniLM; ms-marco and bge cross-encoders): `input_ids`, `attention_mask` and,
 * when the graph declares it, `token_type_ids`, padded to the batch's longest row.
 */
function feeds(rows: readonly EncodedText[], inputNames: readonly string[]): Record<string, ort.Tensor> {
  const length = Math.max(1, ...rows.map((row) => row.ids.length));
  const ids = new BigInt64Array(rows.length * length);
  const mask = new BigInt64Array(rows.length * length);
  const types = new BigInt64Array(rows.length * length);
  rows.forEach((row, r) => {
    row.ids.forEach((id, t) => {
      ids[r * length + t] = BigInt(id);
      mask[r * length + t] = 1n;
      types[r * length + t] = BigInt(row.typeIds[t] ?? 0);
    });
  });
  const dims = [rows.length, length];
  const all: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', ids, dims),
    attention_mask: new ort.Tensor('int64', mask, dims),
    token_type_ids: new ort.Tensor('int64', types, dims),
  };
  const missing = inputNames.filter((name) => all[name] === undefined);
  if (missing.length > 0) throw new Error(`model wants inputs this adapter cannot feed: ${missing.join(', ')}`);
  return Object.fromEntries(inputNames.map((name) => [name, all[name] as ort.Tensor]));
}

function loadTokenizer(path: string): Promise<HuggingFaceTokenizer> {
  return HuggingFaceTokenizer.load(path);
}

interface EncodeJob {
  readonly encoded: EncodedText;
  readonly tokens: boolean;
}

export class BertEncoder extends HostedEncoder<HuggingFaceTokenizer, EncodeJob> {
  constructor(dir: string, manifest: ModelManifest, runtime: RuntimeOptions, queue: QueueOptions) {
    super(manifest.identity, dir, manifest, loadTokenizer, runtime, queue);
  }

  protected job(
    tokenizer: HuggingFaceTokenizer,
    text: string,
    kind: TextKind | undefined,
    tokens: boolean,
  ): QueueItem<EncodeJob> {
    // §7.3 `kind` selects the asymmetric prefix (e5 "query: " / "passage: "); without it the text goes in as is.
    const prefix = kind === undefined ? '' : (this.manifest.prefixes?.[kind] ?? '');
    const encoded = tokenizer.encode(prefix + text, this.info.maxTokens);
    return { input: { encoded, tokens }, tokens: encoded.ids.length };
  }

  protected countTokens(tokenizer: HuggingFaceTokenizer, text: string): number {
    return tokenizer.encode(text, Number.MAX_SAFE_INTEGER).ids.length;
  }

  protected async runBatch(jobs: readonly EncodeJob[], background: boolean): Promise<EncoderOutput[]> {
    const { session } = await this.host.acquire();
    const output = this.manifest.output ?? 'last_hidden_state';
    const result = await this.host.run(
      feeds(
        jobs.map((job) => job.encoded),
        session.inputNames,
      ),
      [output],
      background,
    );
    const states = result[output] as ort.Tensor;
    const [, time = 0, hidden = 0] = states.dims;
    const data = states.data as Float32Array;
    return jobs.map((job, row) => {
      const length = job.encoded.ids.length;
      const start = row * time * hidden;
      if (job.tokens) return { rows: length, dimension: hidden, data: data.subarray(start, start + length * hidden) };
      return this.#pool(data.subarray(start, start + time * hidden), length, hidden);
    });
  }

  /** Attention-mask-aware pooling: mean over the row's real tokens only, or its first ([CLS]) token. */
  #pool(states: Float32Array, length: number, hidden: number): Float32Array {
    const vector = new Float32Array(hidden);
    if (this.manifest.pooling === 'cls') vector.set(states.subarray(0, hidden));
    else {
      for (let t = 0; t < length; t++) {
        for (let k = 0; k < hidden; k++) vector[k] = (vector[k] ?? 0) + (states[t * hidden + k] ?? 0);
      }
      for (let k = 0; k < hidden; k++) vector[k] = (vector[k] ?? 0) / Math.max(1, length);
    }
    if (this.manifest.normalize === true) {
      const norm = Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0));
      if (norm > 0) for (let k = 0; k < hidden; k++) vector[k] = (vector[k] ?? 0) / norm;
    }
    return vector;
  }
}

/** A (query, passage) → logit cross-encoder; a two-logit head scores with its last (positive-class) logit. */
export class BertCrossEncoder extends HostedModel<HuggingFaceTokenizer, EncodedText, number> implements CrossEncoder {
  readonly info: CrossEncoderInfo;

  constructor(dir: string, manifest: ModelManifest, runtime: RuntimeOptions, queue: QueueOptions) {
    // A rerank is a caller waiting on its answer: it has no bulk work for a background session to take.
    super(manifest.identity, dir, manifest, loadTokenizer, { ...runtime, backgroundNice: 0 }, queue);
    this.info = { identity: modelIdentity(manifest), maxTokens: manifest.maxTokens };
  }

  async score(
    query: string,
    passages: readonly string[],
    signal?: AbortSignal,
    caller?: string,
    progress?: BatchProgress,
  ): Promise<Float32Array> {
    const { tokenizer } = await this.host.acquire();
    const { maxTokens } = this.info;
    const head = readablePrefix(query, maxTokens);
    const slice = new TimeSlice(signal);
    const items: QueueItem<EncodedText>[] = [];
    for (const passage of passages) {
      const encoded = tokenizer.encodePair(head, readablePrefix(passage, maxTokens), maxTokens);
      items.push({ input: encoded, tokens: encoded.ids.length });
      await slice.due();
    }
    return Float32Array.from(await this.queue.submit(items, signal, { caller, progress }));
  }

  protected warmUp(): Promise<unknown> {
    return this.score('warm-up', ['warm-up']);
  }

  protected async runBatch(pairs: readonly EncodedText[]): Promise<number[]> {
    const { session } = await this.host.acquire();
    const output = this.manifest.output ?? 'logits';
    const result = await this.host.run(feeds(pairs, session.inputNames), [output]);
    const logits = result[output] as ort.Tensor;
    const width = logits.dims.length > 1 ? (logits.dims[logits.dims.length - 1] ?? 1) : 1;
    const data = logits.data as Float32Array;
    return pairs.map((_, row) => data[row * width + width - 1] ?? 0);
  }
}
