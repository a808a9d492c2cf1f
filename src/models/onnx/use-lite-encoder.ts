import { readFile } from 'node:fs/promises';
import type { QueueItem, QueueOptions } from '../inference-queue.js';
import type { ModelManifest } from '../manifest.js';
import { SentencePieceTokenizer, type Vocabulary } from '../tokenizers/sentencepiece.js';
import { HostedEncoder, type EncoderOutput } from './hosted-model.js';
import type { RuntimeOptions } from './model-host.js';
import { denseFeeds, sparseFeeds } from './use-lite-feeds.js';

/** The converted USE-lite graph's own conventions (see default-model.ts). */
const RESERVED_IDS = 6;
const UNKNOWN_ID = 0;

interface Job {
  readonly ids: readonly number[];
  readonly tokens: boolean;
  /** With `tokens`: each id's `[start, end)` in the text, where the tokenizer can tell (§7.5). */
  readonly offsets?: Uint32Array | undefined;
}

/**
 * The default encoder: the USE-lite graph built by use-lite-graph.ts. Its input is a dense token batch (`ids` padded
 * to the longest row, and `lengths`), so bucketing by length keeps the padding small; a directory built by an older
 * version (the op-by-op graph, sparse `indices`/`values` input) is still fed what it expects. It has no
 * query/document prefixes: `kind` changes nothing.
 */
export class UseLiteEncoder extends HostedEncoder<SentencePieceTokenizer, Job> {
  constructor(dir: string, manifest: ModelManifest, runtime: RuntimeOptions, queue: QueueOptions) {
    super('use-lite', dir, manifest, loadVocabulary, runtime, queue);
  }

  protected job(tokenizer: SentencePieceTokenizer, text: string, _kind: unknown, tokens: boolean): QueueItem<Job> {
    // The graph clips to maxTokens itself; truncating first keeps the cost accounting honest.
    const max = this.info.maxTokens;
    const aligned = tokens ? tokenizer.encodeWithOffsets(text) : undefined;
    const ids = (aligned?.ids ?? tokenizer.encode(text)).slice(0, max);
    return { input: { ids, tokens, offsets: aligned?.offsets.slice(0, 2 * max) }, tokens: ids.length };
  }

  protected countTokens(tokenizer: SentencePieceTokenizer, text: string): number {
    return tokenizer.encode(text).length;
  }

  protected async runBatch(jobs: readonly Job[], background: boolean): Promise<EncoderOutput[]> {
    const { session } = await this.host.acquire();
    const wantTokens = jobs.some((job) => job.tokens);
    const rows = jobs.map((job) => job.ids);
    const feeds = session.inputNames.includes('indices') ? sparseFeeds(rows) : denseFeeds(rows, wantTokens);
    const result = await this.host.run(feeds, wantTokens ? ['embeddings', 'token_states'] : ['embeddings'], background);
    const dimension = this.info.dimension;
    const embeddings = result.embeddings?.data as Float32Array;
    const states = result.token_states;
    const time = states?.dims[1] ?? 0;
    return jobs.map((job, row) => {
      if (!job.tokens || states === undefined) return embeddings.slice(row * dimension, (row + 1) * dimension);
      const start = row * time * dimension;
      // A view, not a copy: copying every row's states would hold the event loop for a large batch.
      const data = (states.data as Float32Array).subarray(start, start + job.ids.length * dimension);
      return { rows: job.ids.length, dimension, data, ...(job.offsets === undefined ? {} : { offsets: job.offsets }) };
    });
  }
}

async function loadVocabulary(path: string): Promise<SentencePieceTokenizer> {
  const vocabulary = JSON.parse(await readFile(path, 'utf8')) as Vocabulary;
  return new SentencePieceTokenizer(vocabulary, { reserved: RESERVED_IDS, unknownId: UNKNOWN_ID });
}
