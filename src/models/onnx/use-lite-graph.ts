/**
 * The default encoder's inference graph: USE-lite's two-layer transformer emitted directly as ONNX from the TF.js
 * package's weights, for speed, with the same function as the op-by-op conversion (tf-to-onnx.ts), which stays the
 * reference it is tested against (test/unit/models/onnx/use-lite-graph.test.ts).
 *
 * What differs from the op-by-op graph:
 * - Dense input. `ids` [batch, time] int32 (any fill past a row's end) and `lengths` [batch] int32 instead of TF's
 *   sparse (indices, values) batch, which the TF graph densified with SparseToDense, then ran every per-token layer
 *   on the gathered real tokens (Where + GatherND) and scattered the result back (ScatterND). Here every per-token
 *   layer runs on the whole [batch·time, width] matrix. Padding rows are computed and never read: attention masks
 *   them as keys, pooling stops at each row's length, and nothing else mixes positions, so the real rows are the
 *   same as in TF (the TF graph leaves its own garbage in those rows: the attention output and residual are dense).
 * - Fused operators where onnxruntime's CPU provider has them: com.microsoft Attention (the packed QKV projection,
 *   per-head scaled dot products, the key padding mask from `lengths`, softmax, the weighted sum), Gemm with its bias
 *   (onnxruntime fuses the following Relu into it), LayerNormalization (one kernel instead of TF's eight ops).
 * - Constants folded at build time: the timing signal table (sin/cos of position × inverse timescale), and the
 *   embedding table scaled by 2 (the TF graph adds the token embedding twice: once scattered alone, once with the
 *   timing signal).
 * - Less work for sentence vectors: the last FFN's output projection is linear, so pooling applies it once to the
 *   sum of each row's hidden activations; the per-token product (a sixth of the work) runs inside an If only when the
 *   boolean input `with_token_states` asks for `token_states` (onnxruntime runs every node whatever is fetched).
 *
 * `quantize: 'int8'` replaces the per-token weight products outside Attention (output projections, the widening
 * residual, the FFNs) by com.microsoft DynamicQuantizeMatMul (int8 weights with one scale per output column,
 * activations quantised per call): faster, but not within the golden vectors' 1e-5.
 */
import onnxProto from 'onnx-proto';
import { valueInfo } from './tf-to-onnx.js';
import type { TfConstant, TfGraph } from './tfjs-graph.js';

const { onnx } = onnxProto;
type NodeProto = onnxProto.onnx.INodeProto;
type TensorProto = onnxProto.onnx.ITensorProto;
type AttributeProto = onnxProto.onnx.IAttributeProto;

const FLOAT = onnx.TensorProto.DataType.FLOAT;
const INT8 = onnx.TensorProto.DataType.INT8;
const INT32 = onnx.TensorProto.DataType.INT32;
const INT64 = onnx.TensorProto.DataType.INT64;
const BOOL = onnx.TensorProto.DataType.BOOL;
const MS = 'com.microsoft';

export const USE_LITE_GRAPH_OPSET = 18;
/** The TF graph's ClipToMaxLength: positions past this are dropped. */
const MAX_POSITIONS = 128;
const HEADS = 4;

export interface UseLiteGraphOptions {
  readonly producer: string;
  /** Weight quantisation; absent: float32, as the TF graph. */
  readonly quantize?: 'int8';
}

const ENCODE = 'module_apply_default/Encoder_en/KonaTransformer/Encode/';
const STACK = `${ENCODE}TransformerStack/`;
const WEIGHTS = {
  embeddings: 'module/Embeddings_en',
  inverseTimescales: `${STACK}Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1`,
  epsilon: `${STACK}Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x`,
  residualKernel: `${ENCODE}Layer_0/TransformerLayer/dense/kernel/ConcatPartitions/concat`,
  residualBias: `${ENCODE}Layer_0/TransformerLayer/dense/bias/ConcatPartitions/concat`,
  hiddenKernel: 'module/Encoder_en/hidden_layers/tanh_layer_0/weights',
  hiddenBias: 'module/Encoder_en/hidden_layers/tanh_layer_0/bias',
  l2Epsilon: 'module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y',
  layer: (k: number) => {
    const partitioned = `${ENCODE}Layer_${k}/TransformerLayer/`;
    const kernels = `module/Encoder_en/KonaTransformer/Encode/Layer_${k}/TransformerLayer/MultiheadAttention/`;
    const ffn = `${STACK}Layer_${k}/TransformerLayer/FFN/`;
    return {
      attentionNormScale: `${partitioned}layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat`,
      attentionNormBias: `${partitioned}layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat`,
      qkvKernel: `${kernels}qkv_transform_single/kernel/part_0`,
      qkvBias: `${partitioned}MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat`,
      outputKernel: `${kernels}output_transform_single/kernel/part_0`,
      outputBias: `${partitioned}MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat`,
      scale: `${STACK}Layer_${k}/TransformerLayer/MultiheadAttention/mul/y`,
      ffnNormScale: `${partitioned}FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat`,
      ffnNormBias: `${partitioned}FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat`,
      ffn1Kernel: `${ffn}conv1/Tensordot/Reshape_1`,
      ffn1Bias: `${partitioned}FFN/conv1/bias/ConcatPartitions/concat`,
      ffn2Kernel: `${ffn}conv2/Tensordot/Reshape_1`,
      ffn2Bias: `${partitioned}FFN/conv2/bias/ConcatPartitions/concat`,
    };
  },
};

const { AttributeType } = onnx.AttributeProto;

function attribute(name: string, value: number): AttributeProto {
  return { name, type: AttributeType.INT, i: value };
}

function floatAttribute(name: string, value: number): AttributeProto {
  return { name, type: AttributeType.FLOAT, f: value };
}

function floatTensor(name: string, data: Float32Array, dims: readonly number[]): TensorProto {
  return { name, dims: [...dims], dataType: FLOAT, rawData: new Uint8Array(data.buffer.slice(0)) };
}

class Builder {
  nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  #counter = 0;

  constructor(private readonly constants: ReadonlyMap<string, TfConstant>) {}

  node(opType: string, inputs: readonly string[], attrs: AttributeProto[] = [], domain = '', output?: string): string {
    this.#counter += 1;
    const name = output ?? `${opType.toLowerCase()}_${this.#counter}`;
    this.nodes.push({ opType, domain, input: [...inputs], output: [name], name, attribute: attrs });
    return name;
  }

  /** The nodes `emit` adds, as a subgraph's (an If branch), not the main graph's. */
  branch(emit: () => void): NodeProto[] {
    const main = this.nodes;
    this.nodes = [];
    try {
      emit();
      return this.nodes;
    } finally {
      this.nodes = main;
    }
  }

  float(name: string, data: Float32Array, dims: readonly number[]): string {
    this.initializers.push(floatTensor(name, data, dims));
    return name;
  }

  int64(name: string, values: readonly number[]): string {
    const data = BigInt64Array.from(values, (v) => BigInt(v));
    this.initializers.push({ name, dims: [values.length], dataType: INT64, rawData: new Uint8Array(data.buffer) });
    return name;
  }

  /** A TF weight, reshaped to `dims` (same element count). */
  weight(tfName: string, dims?: readonly number[]): { name: string; data: Float32Array; dims: readonly number[] } {
    const constant = this.constants.get(tfName);
    if (constant?.dtype !== 'float32') throw new Error(`USE-lite weight ${tfName} is missing`);
    const shape = dims ?? constant.shape;
    if (shape.reduce((a, b) => a * b, 1) !== constant.data.length)
      throw new Error(`${tfName}: cannot be ${shape.join('×')}`);
    return { name: tfName, data: constant.data as Float32Array, dims: shape };
  }

  scalar(tfName: string): number {
    const value = this.weight(tfName).data[0];
    if (value === undefined) throw new Error(`USE-lite constant ${tfName} is empty`);
    return value;
  }

  /** An initialiser for a TF weight (once per name). */
  tensor(tfName: string, dims?: readonly number[]): string {
    const { name, data, dims: shape } = this.weight(tfName, dims);
    if (!this.initializers.some((t) => t.name === name)) this.float(name, data, shape);
    return name;
  }
}

/**
 * `x` [rows, in] × kernel [in, out] + bias as one Gemm, or (int8) one DynamicQuantizeMatMul: per-column symmetric
 * int8 weights, the activations quantised per call.
 */
function linear(
  b: Builder,
  x: string,
  kernel: string,
  bias: string,
  dims: readonly number[],
  quantize?: 'int8',
): string {
  if (quantize === undefined) return b.node('Gemm', [x, b.tensor(kernel, dims), b.tensor(bias)]);
  const { data } = b.weight(kernel, dims);
  const [rows = 0, cols = 0] = dims;
  const scales = new Float32Array(cols);
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) scales[j] = Math.max(scales[j]!, Math.abs(data[i * cols + j]!));
  }
  for (let j = 0; j < cols; j++) scales[j] = scales[j]! > 0 ? scales[j]! / 127 : 1;
  const q = new Int8Array(rows * cols);
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) q[i * cols + j] = Math.round(data[i * cols + j]! / scales[j]!);
  }
  const name = `${kernel}/int8`;
  b.initializers.push({ name, dims: [rows, cols], dataType: INT8, rawData: new Uint8Array(q.buffer) });
  const scale = b.float(`${kernel}/scale`, scales, [cols]);
  return b.node('DynamicQuantizeMatMul', [x, name, scale, '', b.tensor(bias)], [], MS);
}

function layerNorm(b: Builder, x: string, scale: string, bias: string, epsilon: number): string {
  return b.node(
    'LayerNormalization',
    [x, b.tensor(scale), b.tensor(bias)],
    [attribute('axis', -1), floatAttribute('epsilon', epsilon)],
  );
}

/**
 * The serialised ONNX model: `ids` [batch, time], `lengths` [batch], `with_token_states` [] → `embeddings`
 * [batch, 512], `token_states` [batch, time, 512] (or [0, 0, 512] when not asked for).
 */
export function buildUseLiteGraph(graph: TfGraph, options: UseLiteGraphOptions): Uint8Array {
  const b = new Builder(graph.constants);
  const q = options.quantize;
  const epsilon = b.scalar(WEIGHTS.epsilon);
  const inputs = clippedInputs(b);
  const layer0 = encoderLayer(b, inputs, 0, layerInput(b, inputs), epsilon, q);
  // Layer 1's FFN output projection is left out: per token only for token_states, and pooling does without it.
  const layer1 = encoderLayer(b, inputs, 1, feedForwardOutput(b, layer0, q), epsilon, q);
  tokenStates(b, inputs, layer1, q);
  pooledEmbeddings(b, inputs, layer1);
  return encodeModel(b, options.producer, layer1.width);
}

/** The inputs clipped to the TF graph's 128 positions, and the shapes derived from them. */
interface Inputs {
  /** `ids` [B, T], T at most 128. */
  readonly ids: string;
  /** `lengths` [B] (int32), at most 128. */
  readonly lengths32: string;
  /** `lengths` [B] as float. */
  readonly lengths: string;
  /** The shape of `ids`: [B, T]. */
  readonly idsShape: string;
  /** [T]. */
  readonly time: string;
}

/** One encoder layer's outputs, up to (not including) its FFN output projection. */
interface LayerOutputs {
  readonly weights: ReturnType<typeof WEIGHTS.layer>;
  /** The residual stream after attention [B·T, width]. */
  readonly attended: string;
  /** The FFN's hidden activations (after Relu) [B·T, inner]. */
  readonly hidden: string;
  readonly width: number;
  readonly inner: number;
}

/** The inputs, clipped to the TF graph's 128 positions: ids [B, T], lengths [B], and their shapes. */
function clippedInputs(b: Builder): Inputs {
  const ids = b.node('Slice', [
    'ids',
    b.int64('zero', [0]),
    b.int64('max_positions', [MAX_POSITIONS]),
    b.int64('one', [1]),
  ]);
  const lengths32 = b.node('Min', ['lengths', b.node('Constant', [], [intTensorAttribute('value', MAX_POSITIONS)])]);
  const lengths = b.node('Cast', [lengths32], [attribute('to', FLOAT)]);
  const idsShape = b.node('Shape', [ids]); // [B, T]
  const time = b.node('Slice', [idsShape, b.int64('one', [1]), b.int64('two', [2]), b.int64('zero', [0])]); // [T]
  return { ids, lengths32, lengths, idsShape, time };
}

/** `x` reshaped to the flattened per-token shape [B·T, width]. */
function flat(b: Builder, x: string, width: number): string {
  return b.node('Reshape', [x, b.int64(`rows_${width}`, [-1, width])]);
}

/** `x` reshaped to the attention shape [B, T, width]. */
function batched(b: Builder, inputs: Inputs, x: string, width: number): string {
  return b.node('Reshape', [
    x,
    b.node('Concat', [inputs.idsShape, b.int64(`width_${width}`, [width])], [attribute('axis', 0)]),
  ]);
}

/** Layer 0's input: 2·embedding(id) + timing(position), per token [B·T, 256]. */
function layerInput(b: Builder, inputs: Inputs): string {
  const embedding = b.weight(WEIGHTS.embeddings);
  const doubled = b.float(
    'embeddings_x2',
    embedding.data.map((v) => v * 2),
    embedding.dims,
  );
  const safeIds = b.node('Max', [inputs.ids, b.node('Constant', [], [intTensorAttribute('value', 0)])]);
  const tokens = b.node('Gather', [doubled, safeIds], [attribute('axis', 0)]); // [B, T, 256]
  const width0 = embedding.dims[1] ?? 0;
  const timing = timingSignal(b.weight(WEIGHTS.inverseTimescales).data, width0);
  const timingTable = b.float('timing_signal', timing, [MAX_POSITIONS, width0]);
  const timingRows = b.node('Slice', [timingTable, b.int64('zero', [0]), inputs.time, b.int64('zero', [0])]); // [T, 256]
  return flat(b, b.node('Add', [tokens, timingRows]), width0);
}

/** The timing signal table [128, width]: sin, then cos, of position × inverse timescale. */
function timingSignal(inverse: Float32Array, width: number): Float32Array {
  const timing = new Float32Array(MAX_POSITIONS * width);
  for (let p = 0; p < MAX_POSITIONS; p++) {
    for (let i = 0; i < inverse.length; i++) {
      // TF multiplies in float32: round the argument as it does.
      const angle = Math.fround(p * inverse[i]!);
      timing[p * width + i] = Math.sin(angle);
      timing[p * width + inverse.length + i] = Math.cos(angle);
    }
  }
  return timing;
}

/** Encoder layer `k` on `x`: attention, the residual, and the FFN's first product with its Relu. */
function encoderLayer(b: Builder, inputs: Inputs, k: number, x: string, epsilon: number, q?: 'int8'): LayerOutputs {
  const w = WEIGHTS.layer(k);
  const qkv = b.weight(w.qkvKernel);
  const inWidth = qkv.dims[2] ?? 0;
  const hidden = (qkv.dims[3] ?? 0) / 3;
  const outWidth = b.weight(w.outputKernel).dims[3] ?? 0;
  // Attention over the layer-normed input, the key padding mask from lengths.
  const normed = batched(b, inputs, layerNorm(b, x, w.attentionNormScale, w.attentionNormBias, epsilon), inWidth);
  const attention = b.node(
    'Attention',
    [normed, b.tensor(w.qkvKernel, [inWidth, 3 * hidden]), b.tensor(w.qkvBias), inputs.lengths32],
    [attribute('num_heads', HEADS), floatAttribute('scale', b.scalar(w.scale))],
    MS,
  );
  const projected = linear(b, flat(b, attention, hidden), w.outputKernel, w.outputBias, [hidden, outWidth], q);
  // Layer 0 widens its residual (AdjustResidualInput); layer 1's is the identity.
  const residual = k === 0 ? linear(b, x, WEIGHTS.residualKernel, WEIGHTS.residualBias, [inWidth, outWidth], q) : x;
  const attended = b.node('Add', [projected, residual]);
  const ffnIn = layerNorm(b, attended, w.ffnNormScale, w.ffnNormBias, epsilon);
  const inner = b.weight(w.ffn1Kernel).dims[1] ?? 0;
  const relu = b.node('Relu', [linear(b, ffnIn, w.ffn1Kernel, w.ffn1Bias, [outWidth, inner], q)]);
  return { weights: w, attended, hidden: relu, width: outWidth, inner };
}

/** A layer's output per token: its FFN output projection plus the residual stream [B·T, width]. */
function feedForwardOutput(b: Builder, layer: LayerOutputs, q?: 'int8'): string {
  const { weights: w } = layer;
  const ffnOut = linear(b, layer.hidden, w.ffn2Kernel, w.ffn2Bias, [layer.inner, layer.width], q);
  return b.node('Add', [ffnOut, layer.attended]);
}

/**
 * `token_states`: the contextual token vectors only when asked for (`with_token_states`), as an If: onnxruntime runs
 * every node of a graph whatever is fetched, and this product is a sixth of the work; pooling does without it.
 */
function tokenStates(b: Builder, inputs: Inputs, last: LayerOutputs, q?: 'int8'): void {
  const { width } = last;
  const statesShape = b.node('Concat', [inputs.idsShape, b.int64(`width_${width}`, [width])], [attribute('axis', 0)]);
  const withStates = b.branch(() => {
    b.node('Reshape', [feedForwardOutput(b, last, q), statesShape], [], '', 'token_states_computed');
  });
  const withoutStates = b.branch(() => {
    b.node('Constant', [], [emptyTensorAttribute('value', [0, 0, width])], '', 'token_states_skipped');
  });
  b.node(
    'If',
    ['with_token_states'],
    [
      graphAttribute('then_branch', withStates, 'token_states_computed', width),
      graphAttribute('else_branch', withoutStates, 'token_states_skipped', width),
    ],
    '',
    'token_states',
  );
}

/**
 * `embeddings`: the mean over each row's first `length` positions (divided by at least one), then tanh(dense), then
 * L2-normalised.
 */
function pooledEmbeddings(b: Builder, inputs: Inputs, last: LayerOutputs): void {
  const { width, inner, weights: w } = last;
  const positions = b.node('Range', [
    b.node('Constant', [], [intTensorAttribute('value', 0)]),
    b.node('Squeeze', [b.node('Cast', [inputs.time], [attribute('to', INT32)]), b.int64('zero', [0])]),
    b.node('Constant', [], [intTensorAttribute('value', 1)]),
  ]); // [T]
  const valid = b.node('Less', [positions, b.node('Unsqueeze', [inputs.lengths32, b.int64('one', [1])])]); // [B, T]
  const weights = b.node('Unsqueeze', [b.node('Cast', [valid], [attribute('to', FLOAT)]), b.int64('one', [1])]);
  const sum = (rows: string, columns: number) =>
    b.node('Squeeze', [b.node('MatMul', [weights, batched(b, inputs, rows, columns)]), b.int64('one', [1])]); // [B, columns]
  // The last FFN's output projection is linear, so it is applied to the pooled sum (Σ relu)·W2 + length·b2 instead of
  // to every token: a sixth of the work when only `embeddings` is fetched (`token_states` keeps the per-token product).
  const lengthColumn = b.node('Unsqueeze', [inputs.lengths, b.int64('one', [1])]);
  const ffnSum = b.node('Gemm', [
    sum(last.hidden, inner),
    b.tensor(w.ffn2Kernel, [inner, width]),
    b.node('Mul', [lengthColumn, b.tensor(w.ffn2Bias)]),
  ]);
  const summed = b.node('Add', [ffnSum, sum(last.attended, width)]); // [B, width]
  const count = b.node('Max', [lengthColumn, b.float('one_f', Float32Array.of(1), [])]);
  const pooled = b.node('Div', [summed, count]);
  const hidden = b.node('Tanh', [
    b.node('Gemm', [pooled, b.tensor(WEIGHTS.hiddenKernel), b.tensor(WEIGHTS.hiddenBias)]),
  ]);
  const squares = b.node(
    'ReduceSum',
    [b.node('Mul', [hidden, hidden]), b.int64('one', [1])],
    [attribute('keepdims', 1)],
  );
  const clamped = b.node('Max', [squares, b.float('l2_epsilon', Float32Array.of(b.scalar(WEIGHTS.l2Epsilon)), [])]);
  b.node('Mul', [hidden, b.node('Reciprocal', [b.node('Sqrt', [clamped])])], [], '', 'embeddings');
}

/** The model around the built nodes and initialisers (one per name), serialised. */
function encodeModel(b: Builder, producer: string, width: number): Uint8Array {
  const unique = new Map(b.initializers.map((t) => [t.name, t]));
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: producer,
    opsetImport: [
      { domain: '', version: USE_LITE_GRAPH_OPSET },
      { domain: MS, version: 1 },
    ],
    graph: {
      name: 'use-lite',
      input: [
        valueInfo('ids', INT32, ['batch', 'time']),
        valueInfo('lengths', INT32, ['batch']),
        valueInfo('with_token_states', BOOL, []),
      ],
      output: [
        valueInfo('embeddings', FLOAT, ['batch', embeddingWidth(b)]),
        valueInfo('token_states', FLOAT, ['batch', 'time', width]),
      ],
      initializer: [...unique.values()],
      node: b.nodes,
    },
  });
  return onnx.ModelProto.encode(model).finish();
}

function embeddingWidth(b: Builder): number {
  return b.weight(WEIGHTS.hiddenKernel).dims[1] ?? 0;
}

function emptyTensorAttribute(name: string, dims: readonly number[]): AttributeProto {
  return { name, type: AttributeType.TENSOR, t: { dims: [...dims], dataType: FLOAT } };
}

function graphAttribute(name: string, nodes: NodeProto[], output: string, width: number): AttributeProto {
  return {
    name,
    type: AttributeType.GRAPH,
    g: { name, node: nodes, output: [valueInfo(output, FLOAT, ['batch', 'time', width])] },
  };
}

function intTensorAttribute(name: string, value: number): AttributeProto {
  return {
    name,
    type: AttributeType.TENSOR,
    t: { dims: [], dataType: INT32, int32Data: [value] },
  };
}
