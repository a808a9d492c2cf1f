import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { RpcError } from '../../protocol/errors.js';
import { verifyFiles, type ModelManifest } from '../manifest.js';
import type { Logger } from '../../protocol/logger.js';
import type { ModelHealth } from '../ports.js';
import { WorkerSession } from './worker-session.js';

export interface RuntimeOptions {
  /** ONNX Runtime intra-op threads per session (models.ts intraOpThreads resolves the setting's 0). */
  readonly intraOpThreads: number;
  /**
   * The OS nice value (1-19) of a second session of the model that runs bulk work (index writes' texts) beside the
   * main one, so that queries neither wait for a bulk batch nor share the cores equally with it; 0 or absent: one
   * session.
   */
  readonly backgroundNice?: number | undefined;
  readonly log: Logger;
}

export interface Loaded<T> {
  readonly session: WorkerSession;
  readonly tokenizer: T;
}

/**
 * A session's threads: `intraOpThreads` of them, which sleep when out of work instead of spinning. Spinning threads
 * took the core the event loop needed: hybrid `retrieve` over HTTP at 8 connections ran at 0.67× with two spinning
 * threads, and at 0.97× the rate of one thread with two that sleep, which still ingest at 1.7× one thread's docs/s
 * (`npm run bench -- http`, `rcp-server ingest` of SciFact, 2 cores).
 */
export function sessionThreads(intraOpThreads: number): ort.InferenceSession.SessionOptions {
  return { intraOpNumThreads: intraOpThreads, extra: { session: { intra_op: { allow_spinning: '0' } } } };
}

/** How a model's session is opened: its threads, and onnxruntime's every graph optimisation. */
export function modelSessionOptions(intraOpThreads: number): ort.InferenceSession.SessionOptions {
  return { ...sessionThreads(intraOpThreads), graphOptimizationLevel: 'all' };
}

/** How long a client should wait before retrying a model that failed to load or run. */
const LOAD_RETRY_MS = 5_000;
const RUN_RETRY_MS = 250;

/**
 * One model's life: load in the background at start-up (sha256-checked files, tokenizer, an ONNX session in its own
 * worker thread, so inference never blocks the event loop), report
 * health, and turn every failure into -32010 with `retryable` and `retryAfterMs` (§12.2) while the process stays up.
 * A failed load is retried on the first call after LOAD_RETRY_MS, so replacing a broken file heals the server.
 */
export class ModelHost<T> {
  #state:
    { status: 'loading' } | { status: 'ready'; model: Loaded<T> } | { status: 'failed'; reason: string; at: number } = {
    status: 'loading',
  };
  #loading: Promise<void>;
  #closing = false;
  /** The background session, opened on the first bulk call (a server that only reads never pays its memory). */
  #background: Promise<WorkerSession | undefined> | undefined;

  constructor(
    readonly name: string,
    private readonly dir: string,
    private readonly manifest: ModelManifest,
    private readonly loadTokenizer: (path: string) => Promise<T>,
    private readonly options: RuntimeOptions,
  ) {
    this.#loading = this.#load();
  }

  /** Settles when the current load attempt has finished, either way. */
  get loaded(): Promise<void> {
    return this.#loading;
  }

  health(): ModelHealth {
    switch (this.#state.status) {
      case 'ready':
        return { ready: true };
      case 'loading':
        return { ready: false, reason: `${this.name}: loading` };
      case 'failed':
        return { ready: false, reason: `${this.name}: ${this.#state.reason}` };
    }
  }

  async #load(): Promise<void> {
    this.#state = { status: 'loading' };
    try {
      await verifyFiles(this.dir, this.manifest);
      const tokenizer = await this.loadTokenizer(join(this.dir, this.manifest.files.tokenizer));
      const session = await WorkerSession.create(
        join(this.dir, this.manifest.files.model),
        modelSessionOptions(this.options.intraOpThreads),
      );
      this.#state = { status: 'ready', model: { session, tokenizer } };
      this.options.log.info({ model: this.name, dir: this.dir }, 'model loaded');
    } catch (error) {
      const reason = (error as Error).message;
      this.#state = { status: 'failed', reason, at: Date.now() };
      this.options.log.error({ model: this.name, dir: this.dir, reason }, 'model failed to load; calls answer -32010');
    }
  }

  /** The loaded model, waiting for a load in progress; -32010 when it cannot be had. */
  async acquire(): Promise<Loaded<T>> {
    await this.#loading;
    if (this.#state.status === 'failed' && Date.now() - this.#state.at >= LOAD_RETRY_MS) {
      this.#loading = this.#load();
      await this.#loading;
    }
    const state = this.#state;
    if (state.status === 'ready') return state.model;
    const waited = state.status === 'failed' ? Date.now() - state.at : 0;
    throw RpcError.backendUnavailable(`model ${this.name} is not loaded`, Math.max(100, LOAD_RETRY_MS - waited));
  }

  /**
   * Runs inference, bulk work (`background`) in the background session where there is one; a runtime failure is
   * logged and becomes -32010, and the session stays usable for the next call.
   */
  async run(
    feeds: Record<string, ort.Tensor>,
    outputs: readonly string[],
    background = false,
  ): Promise<Record<string, ort.Tensor>> {
    const { session: main } = await this.acquire();
    const session = background ? ((await this.#backgroundSession()) ?? main) : main;
    try {
      const result = await session.run(feeds, outputs);
      return Object.fromEntries(outputs.map((name) => [name, result[name] as ort.Tensor]));
    } catch (error) {
      // A run cut short by close() (shutdown, or a start-up that failed) is no fault of the model's.
      if (!this.#closing)
        this.options.log.error({ model: this.name, reason: (error as Error).message }, 'inference failed');
      throw RpcError.backendUnavailable(`model ${this.name} failed to run`, RUN_RETRY_MS);
    }
  }

  /**
   * The session for bulk work at `backgroundNice`, opened once; undefined when there is none to be had (0, closing,
   * or it failed to open: bulk work then runs in the main session, at the main session's priority, and it is logged).
   */
  #backgroundSession(): Promise<WorkerSession | undefined> {
    const nice = this.options.backgroundNice ?? 0;
    if (nice <= 0 || this.#closing) return Promise.resolve(undefined);
    this.#background ??= this.#openBackground(nice).then(
      (session) => {
        this.options.log.info({ model: this.name, nice, niced: session.niced }, 'model background session opened');
        return session;
      },
      (error: unknown) => {
        const reason = (error as Error).message;
        this.options.log.error({ model: this.name, reason }, 'model background session failed; bulk work shares the main');
        return undefined;
      },
    );
    return this.#background;
  }

  /**
   * The model file checked against its manifest again, then opened: a file replaced in place since the load would
   * otherwise embed the writes with another model than the queries, silently.
   */
  async #openBackground(nice: number): Promise<WorkerSession> {
    const file = this.manifest.files.model;
    await verifyFiles(this.dir, this.manifest, [file]);
    return WorkerSession.create(join(this.dir, file), modelSessionOptions(this.options.intraOpThreads), nice);
  }

  async close(): Promise<void> {
    this.#closing = true;
    await this.#loading;
    await (await this.#background)?.release();
    if (this.#state.status === 'ready') await this.#state.model.session.release();
    this.#state = { status: 'failed', reason: 'closed', at: Date.now() };
  }
}

export { ort };
