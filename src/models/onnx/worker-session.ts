import * as ort from 'onnxruntime-node';
import { WorkerChannel } from '../../platform/worker-thread.js';
import type { SessionReply, SessionRequest, TensorMessage } from './session-protocol.js';

/**
 * An ONNX session run in its own worker thread (session-worker.ts): the same `run` as an InferenceSession, but the
 * inference never blocks the event loop. Calls are answered in order. A worker that dies fails every waiting call
 * and every later one (the model host turns that into -32010).
 */
export class WorkerSession {
  readonly #worker = new WorkerChannel<SessionRequest, SessionReply>(import.meta.url, './session-worker');
  inputNames: readonly string[] = [];
  outputNames: readonly string[] = [];
  /** Whether the session's threads run at the lower priority asked for (`nice`). */
  niced = false;

  private constructor() {}

  /**
   * Opens the model (a file path, or the model's bytes) in a new worker; with `nice` (1-19), the worker's thread and
   * the session's own threads run at that lower OS priority where the platform allows (platform/thread-priority.ts).
   */
  static async create(
    model: string | Uint8Array,
    options: ort.InferenceSession.SessionOptions,
    nice = 0,
  ): Promise<WorkerSession> {
    const session = new WorkerSession();
    try {
      const reply = await session.#worker.call({ op: 'open', model, options, nice });
      session.niced = reply.niced === true;
      session.inputNames = reply.inputNames ?? [];
      session.outputNames = reply.outputNames ?? [];
      return session;
    } catch (error) {
      await session.#worker.terminate();
      throw error;
    }
  }

  /**
   * Runs the session on `feeds`. A feed whose data owns its whole buffer is handed over to the worker, not copied
   * (copying tens of megabytes would hold the event loop): the caller must not read a feed's data afterwards.
   */
  async run(feeds: Record<string, ort.Tensor>, outputs?: readonly string[]): Promise<Record<string, ort.Tensor>> {
    const messages: Record<string, TensorMessage> = {};
    const transfer: ArrayBuffer[] = [];
    for (const [name, tensor] of Object.entries(feeds)) {
      messages[name] = { type: tensor.type, data: tensor.data, dims: tensor.dims };
      const view = tensor.data as ArrayBufferView;
      if (view.buffer instanceof ArrayBuffer && view.byteOffset === 0 && view.byteLength === view.buffer.byteLength)
        transfer.push(view.buffer);
    }
    const reply = await this.#worker.call({ op: 'run', feeds: messages, outputs }, transfer);
    return Object.fromEntries(
      Object.entries(reply.outputs ?? {}).map(([name, t]) => [
        name,
        new ort.Tensor(t.type, t.data as Float32Array, t.dims),
      ]),
    );
  }

  async release(): Promise<void> {
    if (!this.#worker.failed) await this.#worker.call({ op: 'release' }).catch(() => undefined);
    await this.#worker.terminate();
  }
}
