import { InferenceQueue, type QueueItem, type QueueOptions } from '../inference-queue.js';
import { modelIdentity, type ModelManifest } from '../manifest.js';
import type { Encoder, EncoderInfo, ModelHealth, TextKind, TokenMatrix } from '../ports.js';
import { ModelHost, type RuntimeOptions } from './model-host.js';

/** What every ONNX model adapter shares: a host (load, health, faults) and its own batching queue. */
export abstract class HostedModel<Tokenizer, Job, Output> {
  protected readonly host: ModelHost<Tokenizer>;
  protected readonly queue: InferenceQueue<Job, Output>;

  constructor(
    name: string,
    dir: string,
    protected readonly manifest: ModelManifest,
    loadTokenizer: (path: string) => Promise<Tokenizer>,
    runtime: RuntimeOptions,
    queue: QueueOptions,
  ) {
    this.host = new ModelHost(name, dir, manifest, loadTokenizer, runtime);
    this.queue = new InferenceQueue(queue, (jobs) => this.runBatch(jobs));
  }

  /** One model call over one length bucket; outputs in input order. */
  protected abstract runBatch(jobs: readonly Job[]): Promise<Output[]>;

  get loaded(): Promise<void> {
    return this.host.loaded;
  }

  /** Observes each model call the queue makes (a metric). */
  get onBatch(): ((items: number, ms: number) => void) | undefined {
    return this.queue.onBatch;
  }

  set onBatch(observer: ((items: number, ms: number) => void) | undefined) {
    this.queue.onBatch = observer;
  }

  /** Texts waiting in this model's queue (a metric). */
  get queueDepth(): number {
    return this.queue.depth;
  }

  health(): ModelHealth {
    return this.host.health();
  }

  close(): Promise<void> {
    return this.host.close();
  }
}

export type EncoderOutput = Float32Array | TokenMatrix;

/** A sentence encoder: one sentence vector per text, or (for late interaction) its contextual token vectors. */
export abstract class HostedEncoder<Tokenizer, Job>
  extends HostedModel<Tokenizer, Job, EncoderOutput>
  implements Encoder
{
  readonly info: EncoderInfo;

  constructor(...args: ConstructorParameters<typeof HostedModel<Tokenizer, Job, EncoderOutput>>) {
    super(...args);
    const manifest = args[2];
    this.info = {
      identity: modelIdentity(manifest),
      dimension: manifest.dimension ?? 0,
      normalized: manifest.normalize ?? false,
      maxTokens: manifest.maxTokens,
    };
  }

  /** Tokenises one text into a queue item (the job, and its token count for the budget). */
  protected abstract job(
    tokenizer: Tokenizer,
    text: string,
    kind: TextKind | undefined,
    tokens: boolean,
  ): QueueItem<Job>;

  /** Tokens the model would see for `text` (before truncation, special tokens included). */
  protected abstract countTokens(tokenizer: Tokenizer, text: string): number;

  async tokenCounter(): Promise<(text: string) => number> {
    const { tokenizer } = await this.host.acquire();
    return (text) => this.countTokens(tokenizer, text);
  }

  async embed(texts: readonly string[], kind: TextKind | undefined, signal?: AbortSignal): Promise<Float32Array[]> {
    return (await this.#submit(texts, kind, false, signal)) as Float32Array[];
  }

  async embedTokens(
    texts: readonly string[],
    kind: TextKind | undefined,
    signal?: AbortSignal,
  ): Promise<TokenMatrix[]> {
    return (await this.#submit(texts, kind, true, signal)) as TokenMatrix[];
  }

  async #submit(texts: readonly string[], kind: TextKind | undefined, tokens: boolean, signal?: AbortSignal) {
    const { tokenizer } = await this.host.acquire();
    return this.queue.submit(
      texts.map((text) => this.job(tokenizer, text, kind, tokens)),
      signal,
    );
  }
}
