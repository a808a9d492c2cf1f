import { Worker } from 'node:worker_threads';

/**
 * Starts the worker thread whose entry module sits at `relative` beside `base` (an `import.meta.url`). Built, the
 * entry is a .js file; under the TypeScript sources (tests, tsx) it is .ts, and the worker registers tsx's loader in
 * its own thread before importing it. The worker never keeps the process alive by itself: the transports do, and
 * exit must not wait on a worker.
 */
export function startWorker(base: string, relative: string): Worker {
  const url = new URL(base.endsWith('.ts') ? `${relative}.ts` : `${relative}.js`, base);
  const worker = url.pathname.endsWith('.ts')
    ? new Worker(
        `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(url.href)}); })`,
        { eval: true },
      )
    : new Worker(url);
  worker.unref();
  return worker;
}

/** What every worker answers: a result, or the error that stopped it. */
export type WorkerReply = { ok: true } | { ok: false; error: string };

/** A call waiting for the worker: sent when the one before it is answered, unless its caller gave up first. */
interface Job<Request, Reply> {
  readonly request: Request;
  readonly transfer: ArrayBuffer[];
  readonly signal: AbortSignal | undefined;
  readonly settle: (reply: Reply | { ok: false; error: string }) => void;
  readonly abandon: (reason: unknown) => void;
}

/**
 * Requests to a worker thread that answers each in order (the HNSW index, an ONNX session). One request is in the
 * worker at a time and the rest wait here, so a call whose caller has given up (its signal aborted: cancelled, past
 * its deadline) is dropped before it costs the worker anything — a burst of abandoned searches must not delay
 * everyone behind it. Calls wait in lanes (one per caller, §15.5; the server's own work in the default lane) and the
 * lanes take turns, one call each: a caller with many calls queued delays another caller's one by one call of its
 * own, not by all of them; within a lane, calls keep their order. A worker that fails or exits fails every waiting
 * call and every later one, so no caller waits forever on a dead thread.
 */
export class WorkerChannel<Request, Reply extends WorkerReply> {
  readonly #worker: Worker;
  /** Waiting calls by lane, lanes in turn order (a lane that has had its turn goes to the back). */
  readonly #lanes = new Map<string, Job<Request, Reply>[]>();
  #inWorker: Job<Request, Reply> | undefined;
  #failure: Error | undefined;

  constructor(base: string, relative: string) {
    this.#worker = startWorker(base, relative);
    this.#worker.on('message', (reply: Reply) => {
      const job = this.#inWorker;
      this.#inWorker = undefined;
      job?.settle(reply);
      this.#next();
    });
    const fail = (error: Error) => {
      this.#failure ??= error;
      const waiting = [...this.#lanes.values()].flat();
      this.#lanes.clear();
      const jobs = [...(this.#inWorker === undefined ? [] : [this.#inWorker]), ...waiting];
      this.#inWorker = undefined;
      for (const job of jobs) job.settle({ ok: false, error: error.message });
    };
    this.#worker.on('error', fail);
    this.#worker.on('exit', (code) => fail(new Error(`worker ${relative} exited (${code})`)));
  }

  /** Whether the worker has failed or exited. */
  get failed(): boolean {
    return this.#failure !== undefined;
  }

  /**
   * Sends `request` in its turn (its `lane`'s turn among the lanes waiting); rejects with the signal's reason,
   * unsent, if `signal` aborts before then.
   */
  call(
    request: Request,
    transfer: ArrayBuffer[] = [],
    signal?: AbortSignal,
    lane = '',
  ): Promise<Extract<Reply, { ok: true }>> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
    return new Promise((resolve, reject) => {
      const queue = this.#lanes.get(lane) ?? [];
      this.#lanes.set(lane, queue);
      queue.push({
        request,
        transfer,
        signal,
        settle: (reply) => (reply.ok ? resolve(reply as Extract<Reply, { ok: true }>) : reject(new Error(reply.error))),
        abandon: reject,
      });
      this.#next();
    });
  }

  #next(): void {
    for (let job = this.#take(); job !== undefined; job = this.#take()) {
      if (job.signal?.aborted === true) {
        job.abandon(job.signal.reason);
        continue;
      }
      try {
        this.#worker.postMessage(job.request, job.transfer);
        this.#inWorker = job;
      } catch (error) {
        // A request that cannot be sent (a value the structured clone refuses) fails alone.
        job.settle({ ok: false, error: (error as Error).message });
      }
    }
  }

  /** The first call of the lane whose turn it is, that lane then going to the back; none while one is in the worker. */
  #take(): Job<Request, Reply> | undefined {
    if (this.#inWorker !== undefined) return undefined;
    const turn = this.#lanes.entries().next().value;
    if (turn === undefined) return undefined;
    const [lane, queue] = turn;
    const job = queue.shift();
    this.#lanes.delete(lane);
    if (queue.length > 0) this.#lanes.set(lane, queue);
    return job;
  }

  async terminate(): Promise<void> {
    await this.#worker.terminate();
  }
}
