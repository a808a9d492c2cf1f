import type { Worker } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import { startWorker } from '../worker-thread.js';
import type { SessionReply, SessionRequest, TensorMessage } from './session-protocol.js';

/**
 * An ONNX session run in its own worker thread (session-worker.ts): the same `run` as an InferenceSession, but the
 * inference never blocks the event loop. Calls are answered in order. A worker that dies fails every waiting call
 * and every later one (the model host turns that into -32010).
 */
export class WorkerSession {
  readonly #worker: Worker;
  readonly #waiting: ((reply: SessionReply) => void)[] = [];
  #failure: Error | undefined;
  inputNames: readonly string[] = [];
  outputNames: readonly string[] = [];

  private constructor() {
    this.#worker = startWorker(import.meta.url, './session-worker');
    this.#worker.on('message', (reply: SessionReply) => this.#waiting.shift()?.(reply));
    const fail = (error: Error) => {
      this.#failure ??= error;
      for (const waiter of this.#waiting.splice(0)) waiter({ ok: false, error: error.message });
    };
    this.#worker.on('error', fail);
    this.#worker.on('exit', (code) => fail(new Error(`session worker exited (${code})`)));
  }

  /** Opens the model (a file path, or the model's bytes) in a new worker. */
  static async create(
    model: string | Uint8Array,
    options: ort.InferenceSession.SessionOptions,
  ): Promise<WorkerSession> {
    const session = new WorkerSession();
    try {
      const reply = await session.#call({ op: 'open', model, options });
      session.inputNames = reply.inputNames ?? [];
      session.outputNames = reply.outputNames ?? [];
      return session;
    } catch (error) {
      await session.#worker.terminate();
      throw error;
    }
  }

  async run(feeds: Record<string, ort.Tensor>, outputs?: readonly string[]): Promise<Record<string, ort.Tensor>> {
    const messages: Record<string, TensorMessage> = {};
    for (const [name, tensor] of Object.entries(feeds)) {
      messages[name] = { type: tensor.type, data: tensor.data, dims: tensor.dims };
    }
    const reply = await this.#call({ op: 'run', feeds: messages, outputs });
    return Object.fromEntries(
      Object.entries(reply.outputs ?? {}).map(([name, t]) => [
        name,
        new ort.Tensor(t.type, t.data as Float32Array, t.dims),
      ]),
    );
  }

  async release(): Promise<void> {
    if (this.#failure === undefined) await this.#call({ op: 'release' }).catch(() => undefined);
    await this.#worker.terminate();
  }

  #call(request: SessionRequest): Promise<SessionReply & { ok: true }> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => {
      this.#waiting.push((reply) => (reply.ok ? resolve(reply) : reject(new Error(reply.error))));
      this.#worker.postMessage(request);
    });
  }
}
