import type { RpcError } from '../../protocol/errors.js';
import { InferenceQueue, type QueueItem, type QueueOptions } from '../inference-queue.js';
import { modelIdentity, type ModelManifest } from '../manifest.js';
import type { BatchProgress, Encoder, EncoderInfo, ModelHealth, TextKind, TokenMatrix } from '../ports.js';
import { TimeSlice } from '../../protocol/time-slice.js';
import { stage } from '../../protocol/tracing.js';
import { countInParts } from '../tokenizers/count-in-parts.js';
import { readablePrefix } from '../tokenizers/readable-prefix.js';
import { ModelHost, type RuntimeOptions } from './model-host.js';

/**
 * What every ONNX model adapter shares: a host (load, health, faults) and its own batching queue. Once loaded, a
 * model runs one small warm-up inference (ONNX Runtime allocates its arenas and picks kernels on the first run)
 * before it reports ready, so the first client call does not pay for it and `/readyz` means "loaded and warmed".
 */
export abstract class HostedModel<Tokenizer, Job, Output> {
  protected readonly host: ModelHost<Tokenizer>;
  protected readonly queue: InferenceQueue<Job, Output>;
  readonly #warmed: Promise<void>;
  #warm = false;

  constructor(
    name: string,
    dir: string,
    protected readonly manifest: ModelManifest,
    loadTokenizer: (path: string) => Promise<Tokenizer>,
    runtime: RuntimeOptions,
    queue: QueueOptions,
  ) {
    this.host = new ModelHost(name, dir, manifest, loadTokenizer, runtime);
    this.queue = new InferenceQueue({ ...queue, background: (runtime.backgroundNice ?? 0) > 0 }, (jobs, background) =>
      this.runBatch(jobs, background),
    );
    // A failed load is the host's to report; warm-up failures only cost the first call its speed.
    this.#warmed = this.host.loaded
      .then(() => (this.host.health().ready ? this.warmUp() : undefined))
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => (this.#warm = true));
  }

  /** One model call over one length bucket, bulk work in the background session; outputs in input order. */
  protected abstract runBatch(jobs: readonly Job[], background: boolean): Promise<Output[]>;

  /** One small real inference after loading. */
  protected abstract warmUp(): Promise<unknown>;

  /** Settles once the first load attempt has finished and, if it succeeded, the warm-up has run. */
  get loaded(): Promise<void> {
    return this.#warmed;
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
    const health = this.host.health();
    return health.ready && !this.#warm ? { ready: false, reason: `${this.host.name}: warming up` } : health;
  }

  close(): Promise<void> {
    return this.host.close();
  }
}

export type EncoderOutput = Float32Array | TokenMatrix;

/** Whose texts these are, what may abandon them, and who is told as they come back. */
interface Submission {
  readonly signal: AbortSignal | undefined;
  readonly caller: string | undefined;
  readonly progress: BatchProgress | undefined;
}

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

  /** Warms the main session, which queries use; the background one opens and warms with the first bulk work. */
  protected warmUp(): Promise<unknown> {
    return this.embed(['warm-up'], 'query');
  }

  queueRefusal(caller: string | undefined): RpcError | undefined {
    return this.queue.refusal(caller);
  }

  async tokenCounter(): Promise<(text: string) => number> {
    const { tokenizer } = await this.host.acquire();
    return (text) => this.countTokens(tokenizer, text);
  }

  async tokenCount(text: string, slice: TimeSlice): Promise<number> {
    return countInParts(await this.tokenCounter(), text, slice);
  }

  async embed(
    texts: readonly string[],
    kind: TextKind | undefined,
    signal?: AbortSignal,
    caller?: string,
    progress?: BatchProgress,
  ): Promise<Float32Array[]> {
    return (await this.#submit(texts, kind, false, { signal, caller, progress })) as Float32Array[];
  }

  async embedTokens(
    texts: readonly string[],
    kind: TextKind | undefined,
    signal?: AbortSignal,
    caller?: string,
    progress?: BatchProgress,
  ): Promise<TokenMatrix[]> {
    return (await this.#submit(texts, kind, true, { signal, caller, progress })) as TokenMatrix[];
  }

  #submit(texts: readonly string[], kind: TextKind | undefined, tokens: boolean, submission: Submission) {
    const attributes = { 'rcp.texts': texts.length, 'rcp.kind': kind ?? 'unspecified' };
    return stage(tokens ? 'encoder.embed_tokens' : 'encoder.embed', attributes, () =>
      this.#tokenizeAndRun(texts, kind, tokens, submission),
    );
  }

  async #tokenizeAndRun(
    texts: readonly string[],
    kind: TextKind | undefined,
    tokens: boolean,
    { signal, caller, progress }: Submission,
  ) {
    const { tokenizer } = await this.host.acquire();
    // Tokenizing is CPU work on the event loop: each text is read only as far as the model's window reaches, and
    // the loop is let go between texts once a slice has run (docs/architecture.md §9).
    const slice = new TimeSlice(signal);
    const jobs: QueueItem<Job>[] = [];
    for (const text of texts) {
      jobs.push(this.job(tokenizer, readablePrefix(text, this.info.maxTokens), kind, tokens));
      await slice.due();
    }
    // A query is someone waiting on an answer: it goes ahead of bulk work (docs/architecture.md §10).
    return this.queue.submit(jobs, signal, { caller, urgent: kind === 'query', progress });
  }
}
