/**
 * The ONNX session worker thread: owns one InferenceSession. onnxruntime-node runs a session synchronously on the
 * thread that calls it, so inference here keeps the event loop that answers every client free (docs/architecture.md
 * §10). Requests are handled one at a time and answered in order with a SessionReply.
 */
import { parentPort } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import { lowerThreadPriority } from '../../platform/thread-priority.js';
import type { SessionReply, SessionRequest, TensorMessage } from './session-protocol.js';

let session: ort.InferenceSession | undefined;
let queue: Promise<void> = Promise.resolve();
const port = parentPort!;

port.on('message', (request: SessionRequest) => {
  queue = queue.then(() =>
    handle(request).then(
      ({ reply, transfer }) => port.postMessage(reply, transfer),
      (error: unknown) => port.postMessage({ ok: false, error: (error as Error).message } satisfies SessionReply),
    ),
  );
});

async function handle(request: SessionRequest): Promise<{ reply: SessionReply; transfer: ArrayBuffer[] }> {
  switch (request.op) {
    case 'open': {
      // Before the session exists: the intra-op threads it starts inherit this thread's priority.
      const niced = lowerThreadPriority(request.nice ?? 0);
      session =
        typeof request.model === 'string'
          ? await ort.InferenceSession.create(request.model, request.options)
          : await ort.InferenceSession.create(request.model, request.options);
      return {
        reply: { ok: true, niced, inputNames: session.inputNames, outputNames: session.outputNames },
        transfer: [],
      };
    }
    case 'run': {
      if (session === undefined) throw new Error('session not open');
      const feeds = Object.fromEntries(
        Object.entries(request.feeds).map(([name, t]) => [
          name,
          new ort.Tensor(t.type, t.data as Float32Array, t.dims),
        ]),
      );
      const result =
        request.outputs === undefined ? await session.run(feeds) : await session.run(feeds, [...request.outputs]);
      const outputs: Record<string, TensorMessage> = {};
      const transfer: ArrayBuffer[] = [];
      for (const [name, tensor] of Object.entries(result)) {
        // A copy the worker owns, so its buffer can be handed over rather than copied again on the main thread.
        const data = (tensor.data as Float32Array).slice();
        outputs[name] = { type: tensor.type, data, dims: tensor.dims };
        transfer.push(data.buffer);
      }
      return { reply: { ok: true, outputs }, transfer };
    }
    case 'release':
      await session?.release();
      session = undefined;
      return { reply: { ok: true }, transfer: [] };
  }
}
