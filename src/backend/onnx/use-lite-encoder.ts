import { readFile } from 'node:fs/promises';
import type { QueueItem, QueueOptions } from '../inference-queue.js';
import type { ModelManifest } from '../manifest.js';
import { SentencePieceTokenizer, type Vocabulary } from '../tokenizers/sentencepiece.js';
import { HostedEncoder, type EncoderOutput } from './hosted-model.js';
import { ort, type RuntimeOptions } from './model-host.js';

/** The converted USE-lite graph's own conventions (see default-model.ts). */
const RESERVED_IDS = 6;
const UNKNOWN_ID = 0;

interface Job {
  readonly ids: readonly number[];
  readonly tokens: boolean;
}

/**
 * The default encoder: the converted USE-lite graph. Its input is a sparse token batch (`indices` = [row, position]
 * pairs, `values` = token ids), so a batch carries no padding at all; bucketing still groups similar lengths because
 * the graph densifies to the longest row internally. It has no query/document prefixes: `kind` changes nothing.
 */
export class UseLiteEncoder extends HostedEncoder<SentencePieceTokenizer, Job> {
  constructor(dir: string, manifest: ModelManifest, runtime: RuntimeOptions, queue: QueueOptions) {
    super('use-lite', dir, manifest, loadVocabulary, runtime, queue);
  }

  protected job(tokenizer: SentencePieceTokenizer, text: string, _kind: unknown, tokens: boolean): QueueItem<Job> {
    // The graph clips to maxTokens itself; truncating first keeps the cost accounting honest.
    const ids = tokenizer.encode(text).slice(0, this.info.maxTokens);
    return { input: { ids, tokens }, tokens: ids.length };
  }

  protected countTokens(tokenizer: SentencePieceTokenizer, text: string): number {
    return tokenizer.encode(text).length;
  }

  protected async runBatch(jobs: readonly Job[]): Promise<EncoderOutput[]> {
    const count = jobs.reduce((sum, job) => sum + job.ids.length, 0);
    const indices = new Int32Array(count * 2);
    const values = new Int32Array(count);
    let at = 0;
    jobs.forEach((job, row) => {
      job.ids.forEach((id, position) => {
        indices[at * 2] = row;
        indices[at * 2 + 1] = position;
        values[at] = id;
        at += 1;
      });
    });
    const wantTokens = jobs.some((job) => job.tokens);
    const result = await this.host.run(
      { indices: new ort.Tensor('int32', indices, [count, 2]), values: new ort.Tensor('int32', values, [count]) },
      wantTokens ? ['embeddings', 'token_states'] : ['embeddings'],
    );
    const dimension = this.info.dimension;
    const embeddings = result.embeddings?.data as Float32Array;
    const states = result.token_states;
    const time = states?.dims[1] ?? 0;
    return jobs.map((job, row) => {
      if (!job.tokens || states === undefined) return embeddings.slice(row * dimension, (row + 1) * dimension);
      const start = row * time * dimension;
      // A view, not a copy: copying every row's states would hold the event loop for a large batch.
      const data = (states.data as Float32Array).subarray(start, start + job.ids.length * dimension);
      return { rows: job.ids.length, dimension, data };
    });
  }
}

async function loadVocabulary(path: string): Promise<SentencePieceTokenizer> {
  const vocabulary = JSON.parse(await readFile(path, 'utf8')) as Vocabulary;
  return new SentencePieceTokenizer(vocabulary, { reserved: RESERVED_IDS, unknownId: UNKNOWN_ID });
}
