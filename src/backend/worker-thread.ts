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

/**
 * Requests to a worker thread that answers each in order (the HNSW index, an ONNX session). A worker that fails or
 * exits fails every waiting call and every later one, so no caller waits forever on a dead thread.
 */
export class WorkerChannel<Request, Reply extends WorkerReply> {
  readonly #worker: Worker;
  readonly #waiting: ((reply: Reply | { ok: false; error: string }) => void)[] = [];
  #failure: Error | undefined;

  constructor(base: string, relative: string) {
    this.#worker = startWorker(base, relative);
    this.#worker.on('message', (reply: Reply) => this.#waiting.shift()?.(reply));
    const fail = (error: Error) => {
      this.#failure ??= error;
      for (const waiter of this.#waiting.splice(0)) waiter({ ok: false, error: error.message });
    };
    this.#worker.on('error', fail);
    this.#worker.on('exit', (code) => fail(new Error(`worker ${relative} exited (${code})`)));
  }

  /** Whether the worker has failed or exited. */
  get failed(): boolean {
    return this.#failure !== undefined;
  }

  call(request: Request, transfer: ArrayBuffer[] = []): Promise<Extract<Reply, { ok: true }>> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => {
      this.#waiting.push((reply) =>
        reply.ok ? resolve(reply as Extract<Reply, { ok: true }>) : reject(new Error(reply.error)),
      );
      this.#worker.postMessage(request, transfer);
    });
  }

  async terminate(): Promise<void> {
    await this.#worker.terminate();
  }
}
