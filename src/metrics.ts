import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Models } from './models/index.js';
import type { Corpus } from './corpus/index.js';
import { METHODS } from './protocol/method-table.js';

/** §7.16 feedback fields counted by name; anything else is `other`. */
const FEEDBACK_FIELDS = new Set(['used', 'cited', 'helpful', 'reward', 'poisonSuspected', 'injectionSuspected']);
/** Corpora with a label of their own in `rcp_corpus_requests_total`; the rest are `other`. */
const CORPUS_LABELS = 20;

/** Pipeline stage names (§9 progress stages); anything else is `other`, so the label set stays closed. */
const STAGES = new Set(['recall', 'fuse', 'rerank', 'pack', 'read', 'chunk', 'embed', 'write', 'index']);

/** One method and code's answers: its counter, and how many it has not yet been told of. */
interface Tally {
  readonly counter: { inc(value: number): void };
  unreported: number;
}

/**
 * Prometheus metrics (§17), through prom-client: process defaults, requests by method and code, latency by
 * method and by pipeline stage, model batch sizes, batch times and queue depth, -32011 refusals by reason, corpus
 * sizes and build info. Method labels are RCP's own method names (anything else is `other`), so a client cannot
 * grow the label set.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'code'>;
  readonly #latency: Histogram<'method'>;
  readonly #stages: Histogram<'method' | 'stage'>;
  readonly #refused: Counter<'reason' | 'method'>;
  readonly #storeFallbacks: Counter;
  readonly #storeLocal: Gauge;
  readonly #feedback: Counter<'signal'>;
  readonly #flags: Counter<'kind'>;
  readonly #known: ReadonlySet<string>;

  constructor(version: string, models: Models, corpus: Corpus | undefined, extraMethods: readonly string[] = []) {
    this.#known = new Set([...Object.keys(METHODS), ...extraMethods]);
    this.#requests = new Counter({
      name: 'rcp_requests_total',
      help: 'Answered JSON-RPC requests by method and result code (0 = success).',
      labelNames: ['method', 'code'],
      registers: [this.registry],
      collect: () => this.#report(),
    });
    this.#latency = new Histogram({
      name: 'rcp_request_duration_seconds',
      help: 'Time from receiving a request to answering it, by method.',
      labelNames: ['method'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
    this.#stages = new Histogram({
      name: 'rcp_stage_duration_seconds',
      help: 'Time spent in each pipeline stage (recall, fuse, rerank, pack; read, chunk, embed, write, index), by method.',
      labelNames: ['method', 'stage'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [this.registry],
    });
    this.#refused = new Counter({
      name: 'rcp_refused_total',
      help: 'Requests refused with -32011 before running: reason overload (load shedding) or rate_limit.',
      labelNames: ['reason', 'method'],
      registers: [this.registry],
    });
    this.#storeFallbacks = new Counter({
      name: 'rcp_rate_limit_store_fallbacks_total',
      help: 'Rate-limit checks answered by local buckets because Redis could not answer in time.',
      registers: [this.registry],
    });
    this.#storeLocal = new Gauge({
      name: 'rcp_rate_limit_store_fallback',
      help: '1 while Redis (redis.url) does not answer and this replica limits with its own buckets, else 0.',
      registers: [this.registry],
    });
    this.#feedback = new Counter({
      name: 'rcp_feedback_signals_total',
      help: 'Feedback signals received (§7.16), by field (used, cited, helpful, reward, poisonSuspected, ...).',
      labelNames: ['signal'],
      registers: [this.registry],
    });
    this.#flags = new Counter({
      name: 'rcp_feedback_flags_total',
      help: 'Hits flagged for review by feedback (§15.2, §15.3): kind poison or injection.',
      labelNames: ['kind'],
      registers: [this.registry],
    });
    this.#modelMetrics(models);
    this.#corpusSize(corpus);
    this.#replication(corpus);
    new Gauge({
      name: 'rcp_build_info',
      help: 'Build information.',
      labelNames: ['version'],
      registers: [this.registry],
    }).set({ version }, 1);
  }

  /** Batch sizes and times of every model call, and the texts waiting in each model's queue. */
  #modelMetrics(models: Models): void {
    const batchSize = new Histogram({
      name: 'rcp_model_batch_size',
      help: 'Texts per model call made by the batching queue, by model role.',
      labelNames: ['model'],
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
      registers: [this.registry],
    });
    const inference = new Histogram({
      name: 'rcp_model_batch_duration_seconds',
      help: 'Time of each model call made by the batching queue, by model role.',
      labelNames: ['model'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [this.registry],
    });
    models.observeBatches((model, items, ms) => {
      batchSize.observe({ model }, items);
      inference.observe({ model }, ms / 1000);
    });
    new Gauge({
      name: 'rcp_model_queue_depth',
      help: 'Texts waiting in each model inference queue.',
      labelNames: ['model'],
      registers: [this.registry],
      collect() {
        for (const [model, depth] of Object.entries(models.queueDepths())) this.set({ model }, depth);
      },
    });
  }

  #corpusSize(corpus: Corpus | undefined): void {
    new Gauge({
      name: 'rcp_corpus_size',
      help: 'Corpus size by kind (documents, chunks, dense, lexical).',
      labelNames: ['kind'],
      registers: [this.registry],
      async collect() {
        if (corpus === undefined || !corpus.health().ready) return;
        const stats = await corpus.stats();
        for (const kind of ['documents', 'chunks', 'dense', 'lexical'] as const) this.set({ kind }, stats[kind]);
      },
    });
  }

  /** A replica's distance from the store of record (store.url): the lag of the last write read, and writes behind. */
  #replication(corpus: Corpus | undefined): void {
    const replica = corpus?.replica;
    if (replica === undefined) return;
    this.#gauge(
      'rcp_replica_lag_seconds',
      "Seconds from a write's commit in the store of record to this replica reading it (the last one read).",
      () => replica.lagSeconds,
    );
    this.#gauge(
      'rcp_replica_behind_writes',
      'Writes committed in the store of record that this replica had not applied when it last looked.',
      () => replica.behind,
    );
  }

  /**
   * Document files given to index/add being read in parser processes, and waiting for one (docs/documents.md): waiting
   * near `4 × content.documents.processes` means document writes are being refused -32011.
   */
  documents(parser: { readonly reading: number; readonly waiting: number }): void {
    this.#gauge(
      'rcp_documents_reading',
      'Document files being read in parser processes (content.documents.processes at most).',
      () => parser.reading,
    );
    this.#gauge(
      'rcp_documents_waiting',
      'Document files waiting for a parser process (4 per process at most; past that, -32011).',
      () => parser.waiting,
    );
  }

  /**
   * Bytes an HTTP listener holds for its clients (§15.5): of bodies still being received, all connections together
   * (bounded by limits.maxBufferedBodyBytes), and of answers written but not yet read by their clients (bounded by
   * limits.maxUnsentBytes). Either near its bound means requests are being refused -32011 for it.
   */
  transfers(bodies: { readonly held: number }, answers: { readonly held: number }): void {
    this.#gauge(
      'rcp_http_body_bytes_receiving',
      'Bytes of request bodies being received, all connections together (limits.maxBufferedBodyBytes).',
      () => bodies.held,
    );
    this.#gauge(
      'rcp_http_answer_bytes_unsent',
      'Bytes of answers written but not yet read by their clients (limits.maxUnsentBytes).',
      () => answers.held,
    );
  }

  /**
   * Named corpora (docs/tenants.md): answered requests by corpus, and the corpora open. The label set is bounded: the
   * first CORPUS_LABELS corpora to be asked for have a label each, every later one counts as `other`.
   */
  corpora(openCount: () => number): (corpus: string) => void {
    const answered = new Counter({
      name: 'rcp_corpus_requests_total',
      help: `Answered requests by corpus (the first ${CORPUS_LABELS} corpora asked for by name, the rest as other).`,
      labelNames: ['corpus'],
      registers: [this.registry],
    });
    this.#gauge('rcp_corpora_open', 'Named corpora open in this process (docs/tenants.md).', () => openCount());
    const labelled = new Map<string, { inc(): void }>();
    const other = answered.labels('other');
    return (corpus) => {
      let counter = labelled.get(corpus);
      if (counter === undefined && labelled.size < CORPUS_LABELS) {
        counter = answered.labels(corpus);
        labelled.set(corpus, counter);
      }
      (counter ?? other).inc();
    };
  }

  /** A gateway's engines (src/gateway/fail-fast.ts): which are marked down now, and how often each has been. */
  downstream(read: () => readonly { engine: string; down: boolean; markedDown: number }[]): void {
    new Gauge({
      name: 'rcp_gateway_engine_down',
      help: 'Whether the gateway has marked an engine down (1: calls to it fail fast until a probe answers).',
      labelNames: ['engine'],
      registers: [this.registry],
      collect() {
        for (const state of read()) this.set({ engine: state.engine }, state.down ? 1 : 0);
      },
    });
    new Counter({
      name: 'rcp_gateway_engine_marked_down_total',
      help: 'Times the gateway has marked an engine down after calls in a row without an answer.',
      labelNames: ['engine'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const state of read()) this.inc({ engine: state.engine }, state.markedDown);
      },
    });
  }

  #processMetrics = false;

  /** Process metrics (CPU, memory, event-loop lag, GC): started once, when metrics are actually served. */
  enableProcessMetrics(): void {
    if (this.#processMetrics) return;
    this.#processMetrics = true;
    collectDefaultMetrics({ register: this.registry, prefix: 'rcp_' });
  }

  #label(method: string): string {
    return this.#known.has(method) ? method : 'other';
  }

  /**
   * Each method's series, looked up once. Answers are tallied here and added to `rcp_requests_total` when it is read
   * (its `collect`): prom-client hashes the label set on every `inc`, a bound child's too, which cost a `ping` more
   * than the rest of its accounting. Bounded: the known methods and `other`, the codes of the §12 table and 0.
   */
  readonly #series = new Map<string, { latency: { observe(seconds: number): void }; codes: Map<number, Tally> }>();

  #seriesOf(method: string) {
    const label = this.#label(method);
    let series = this.#series.get(label);
    if (series === undefined) {
      series = { latency: this.#latency.labels(label), codes: new Map() };
      this.#series.set(label, series);
    }
    return { label, series };
  }

  /** The session hook: one observation per answered request. */
  readonly observe = (method: string, code: number, ms: number): void => {
    const { label, series } = this.#seriesOf(method);
    let tally = series.codes.get(code);
    if (tally === undefined) {
      tally = { counter: this.#requests.labels(label, String(code)), unreported: 0 };
      series.codes.set(code, tally);
    }
    tally.unreported++;
    series.latency.observe(ms / 1000);
  };

  /** The answers tallied since `rcp_requests_total` was last read, added to it. */
  #report(): void {
    for (const { codes } of this.#series.values()) {
      for (const tally of codes.values()) {
        if (tally.unreported === 0) continue;
        tally.counter.inc(tally.unreported);
        tally.unreported = 0;
      }
    }
  }

  /** The session hook: one observation per finished pipeline stage. */
  readonly observeStage = (method: string, stage: string, ms: number): void => {
    this.#stages.observe({ method: this.#label(method), stage: STAGES.has(stage) ? stage : 'other' }, ms / 1000);
  };

  /** Admission's hook: a request refused with -32011 before it ran. */
  readonly refused = (reason: 'overload' | 'rate_limit', method: string): void => {
    this.#refused.inc({ reason, method: this.#label(method) });
  };

  readonly feedbackSignal = (fields: readonly string[]): void => {
    for (const field of fields) if (FEEDBACK_FIELDS.has(field)) this.#feedback.inc({ signal: field });
  };

  readonly feedbackFlag = (kind: 'poison' | 'injection'): void => {
    this.#flags.inc({ kind });
  };

  readonly rateLimitStoreFallback = (): void => {
    this.#storeFallbacks.inc();
  };

  readonly rateLimitStoreLocal = (local: boolean): void => {
    this.#storeLocal.set(local ? 1 : 0);
  };

  /** A gauge of one number, read from `read` whenever the metrics are scraped. */
  #gauge(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }
}
