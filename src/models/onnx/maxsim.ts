import onnxProto from 'onnx-proto';
import { RpcError } from '../../protocol/errors.js';
import { TimeSlice } from '../../protocol/time-slice.js';
import type { LateInteractionKernel, TokenMatrix } from '../ports.js';
import { ort, sessionThreads } from './model-host.js';
import { WorkerSession } from './worker-session.js';

const { onnx } = onnxProto;
const FLOAT = onnx.TensorProto.DataType.FLOAT;
const INT64 = onnx.TensorProto.DataType.INT64;
/**
 * Padded document floats per runtime call (4 MiB): packing and handing over a chunk stays a few milliseconds of
 * event-loop time, however long the passages are. At least one document goes in each call.
 */
const CHUNK_FLOATS = 1 << 20;

/**
 * MaxSim as a tiny ONNX graph, built here (no file): rows are L2-normalised, scores = Σ_q max_t (d_t · q) with
 * padded document rows masked out by a large negative bias.
 *   query [q, dim], documents [n, t, dim], mask [n, t] → scores [n]
 */
function maxSimGraph(): Uint8Array {
  const { AttributeType } = onnx.AttributeProto;
  const int = (name: string, i: number) => ({ name, type: AttributeType.INT, i });
  const ints = (name: string, values: number[]) => ({ name, type: AttributeType.INTS, ints: values });
  const axes = (name: string, values: number[]) => ({
    name,
    dims: [values.length],
    dataType: INT64,
    rawData: new Uint8Array(BigInt64Array.from(values, BigInt).buffer),
  });
  const scalar = (name: string, value: number) => ({ name, dims: [], dataType: FLOAT, floatData: [value] });
  const node = (opType: string, input: string[], output: string, attribute: onnxProto.onnx.IAttributeProto[] = []) => ({
    opType,
    input,
    output: [output],
    name: output,
    attribute,
  });
  const tensor = (name: string, dims: (number | string)[]) => ({
    name,
    type: {
      tensorType: {
        elemType: FLOAT,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  });
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: 'rcp-server maxsim',
    opsetImport: [{ domain: '', version: 18 }],
    graph: {
      name: 'maxsim',
      input: [tensor('query', ['q', 'dim']), tensor('documents', ['n', 't', 'dim']), tensor('mask', ['n', 't'])],
      output: [tensor('scores', ['n'])],
      initializer: [axes('axis1', [1]), axes('axis2', [2]), scalar('one', 1), scalar('big', 1e9)],
      node: [
        node('LpNormalization', ['query'], 'qn', [int('axis', -1), int('p', 2)]),
        node('LpNormalization', ['documents'], 'dn', [int('axis', -1), int('p', 2)]),
        node('Transpose', ['qn'], 'qt', [ints('perm', [1, 0])]),
        node('MatMul', ['dn', 'qt'], 'similarity'),
        node('Sub', ['mask', 'one'], 'masked'),
        node('Mul', ['masked', 'big'], 'bias2d'),
        node('Unsqueeze', ['bias2d', 'axis2'], 'bias'),
        node('Add', ['similarity', 'bias'], 'biased'),
        node('ReduceMax', ['biased', 'axis1'], 'best', [int('keepdims', 0)]),
        node('ReduceSum', ['best', 'axis1'], 'scores', [int('keepdims', 0)]),
      ],
    },
  });
  return onnx.ModelProto.encode(model).finish();
}

export class OnnxMaxSim implements LateInteractionKernel {
  readonly #session: Promise<WorkerSession>;

  constructor(intraOpThreads: number) {
    // In a worker thread: scoring a thousand passages must not hold the event loop.
    this.#session = WorkerSession.create(maxSimGraph(), sessionThreads(intraOpThreads));
  }

  async maxSim(query: TokenMatrix, documents: readonly TokenMatrix[], signal?: AbortSignal): Promise<Float32Array> {
    const session = await this.#session;
    const scores = new Float32Array(documents.length);
    const longest = Math.max(1, ...documents.map((d) => d.rows));
    const perCall = Math.max(1, Math.floor(CHUNK_FLOATS / (longest * query.dimension)));
    // A worker's replies can be drained in one turn of the event loop: the loop is let go between slices.
    const slice = new TimeSlice(signal);
    for (let start = 0; start < documents.length; start += perCall) {
      await slice.due();
      signal?.throwIfAborted();
      const chunk = documents.slice(start, start + perCall);
      const { documents: packed, mask } = pack(chunk, query.dimension);
      // The session takes its feeds' buffers: the query goes in as a fresh copy each call.
      const queryTensor = new ort.Tensor('float32', query.data.slice(), [query.rows, query.dimension]);
      try {
        const result = await session.run({ query: queryTensor, documents: packed, mask });
        scores.set(result.scores?.data as Float32Array, start);
      } catch (error) {
        throw RpcError.backendUnavailable(`late-interaction scoring failed: ${(error as Error).message}`, 250);
      }
    }
    return scores;
  }

  async close(): Promise<void> {
    await (await this.#session).release();
  }
}

/** Pads documents to the longest; padding rows are ones (normalisable) and masked out. */
function pack(documents: readonly TokenMatrix[], dimension: number): { documents: ort.Tensor; mask: ort.Tensor } {
  const time = Math.max(1, ...documents.map((d) => d.rows));
  const data = new Float32Array(documents.length * time * dimension).fill(1);
  const mask = new Float32Array(documents.length * time);
  documents.forEach((document, i) => {
    data.set(document.data.subarray(0, document.rows * dimension), i * time * dimension);
    mask.fill(1, i * time, i * time + document.rows);
  });
  return {
    documents: new ort.Tensor('float32', data, [documents.length, time, dimension]),
    mask: new ort.Tensor('float32', mask, [documents.length, time]),
  };
}
