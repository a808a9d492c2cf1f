/**
 * TF graph → ONNX, op by op. Written for the default encoder's graph (USE-lite: sparse token input, two transformer
 * layers); every op that graph uses is mapped, anything else is refused by name. Since converter v2 the model that
 * `models build` writes is use-lite-graph.ts's inference graph (dense input, fused operators, 1.5× faster); this
 * faithful conversion is the reference that graph is tested against (test/unit/models/onnx/use-lite-graph.test.ts).
 *
 * Conventions:
 * - TF int32 tensors become ONNX int64 throughout: ONNX shape ops (Shape, Reshape, ScatterND, GatherND, Expand,
 *   NonZero) speak int64, so one integer type avoids a Cast at every boundary. Graph inputs stay int32, as in TF,
 *   and are widened once.
 * - Arguments TF takes as tensors but which are constants here (slice bounds, axes, perms, split sizes) are read at
 *   conversion time and become ONNX attributes or int64 initialisers.
 * - Opset 18, so every Reduce* takes its axes as an input.
 */
import onnxProto from 'onnx-proto';
import type { TfAttr, TfConstant, TfGraph, TfNode } from './tfjs-graph.js';

const { onnx } = onnxProto;
type NodeProto = onnxProto.onnx.INodeProto;
type TensorProto = onnxProto.onnx.ITensorProto;
type AttributeProto = onnxProto.onnx.IAttributeProto;

export const OPSET = 18;
const FLOAT = onnx.TensorProto.DataType.FLOAT;
const INT32 = onnx.TensorProto.DataType.INT32;
const INT64 = onnx.TensorProto.DataType.INT64;
const BOOL = onnx.TensorProto.DataType.BOOL;
/** "To the end" for Slice: larger than any dimension, exact as a double. */
const TO_END = Number.MAX_SAFE_INTEGER;

export interface GraphEndpoint {
  /** TF node (or `node:k`) that feeds this output. */
  readonly tensor: string;
  /** Name of the ONNX graph output. */
  readonly name: string;
  readonly dims: readonly (number | string)[];
}

export interface ConvertOptions {
  readonly inputs: readonly {
    readonly name: string;
    readonly dims: readonly (number | string)[];
  }[];
  readonly outputs: readonly GraphEndpoint[];
  readonly producer: string;
}

/** TF DataType enum → ONNX element type (int32 widened, see above). */
function onnxType(tfType: number | string | undefined): number {
  switch (tfType) {
    case 1:
    case 'DT_FLOAT':
      return FLOAT;
    case 3:
    case 'DT_INT32':
    case 9:
    case 'DT_INT64':
      return INT64;
    case 10:
    case 'DT_BOOL':
      return BOOL;
    default:
      throw new Error(`unsupported TF dtype ${String(tfType)}`);
  }
}

function int(attr: TfAttr | undefined, fallback = 0): number {
  return attr?.i === undefined ? fallback : Number(attr.i);
}

function bit(mask: number, index: number): boolean {
  return (mask & (1 << index)) !== 0;
}

function int64Tensor(name: string, values: readonly number[], dims: readonly number[] = [values.length]): TensorProto {
  const data = BigInt64Array.from(values, (v) => BigInt(v));
  return {
    name,
    dims: [...dims],
    dataType: INT64,
    rawData: new Uint8Array(data.buffer),
  };
}

function constantTensor(name: string, constant: TfConstant): TensorProto {
  if (constant.dtype === 'float32') {
    const raw = new Uint8Array(constant.data.buffer, constant.data.byteOffset, constant.data.byteLength);
    return {
      name,
      dims: [...constant.shape],
      dataType: FLOAT,
      rawData: raw.slice(),
    };
  }
  return int64Tensor(name, Array.from(constant.data), constant.shape);
}

function attribute(name: string, value: number | readonly number[] | TensorProto): AttributeProto {
  const { AttributeType } = onnx.AttributeProto;
  if (typeof value === 'number') return { name, type: AttributeType.INT, i: value };
  if (isNumberList(value)) return { name, type: AttributeType.INTS, ints: [...value] };
  return { name, type: AttributeType.TENSOR, t: value };
}

function isNumberList(value: readonly number[] | TensorProto): value is readonly number[] {
  return Array.isArray(value);
}

class OnnxGraphBuilder {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  private counter = 0;

  constructor(private readonly constants: ReadonlyMap<string, TfConstant>) {}

  /** Adds one node; returns its output names. */
  node(opType: string, inputs: readonly string[], outputs: readonly string[], attrs: AttributeProto[] = []): string[] {
    this.nodes.push({
      opType,
      input: [...inputs],
      output: [...outputs],
      name: outputs[0] ?? null,
      attribute: attrs,
    });
    return [...outputs];
  }

  /** A fresh intermediate name derived from `base`. */
  temp(base: string): string {
    this.counter += 1;
    return `${base}__${this.counter}`;
  }

  int64(base: string, values: readonly number[], dims?: readonly number[]): string {
    const name = this.temp(base);
    this.initializers.push(int64Tensor(name, values, dims));
    return name;
  }

  initializer(name: string, constant: TfConstant): void {
    this.initializers.push(constantTensor(name, constant));
  }

  /** The compile-time value of a TF input that must be a constant (bounds, axes, perms). */
  constant(tensor: string): number[] {
    const value = this.constants.get(stripOutput(tensor));
    if (value === undefined) throw new Error(`expected a constant for ${tensor}`);
    return Array.from(value.data);
  }

  constantOf(tensor: string): TfConstant | undefined {
    return this.constants.get(stripOutput(tensor));
  }
}

function stripOutput(tensor: string): string {
  const colon = tensor.lastIndexOf(':');
  return colon > 0 && /^\d+$/.test(tensor.slice(colon + 1)) ? tensor.slice(0, colon) : tensor;
}

/** ONNX tensor name for a TF tensor reference (`node` = output 0, `node:k`). */
function tensorName(tfRef: string): string {
  return tfRef.endsWith(':0') ? tfRef.slice(0, -2) : tfRef;
}

type OpHandler = (b: OnnxGraphBuilder, node: TfNode, inputs: readonly string[], raw: readonly string[]) => void;

const same =
  (opType: string): OpHandler =>
  (b, node, inputs) =>
    b.node(opType, inputs, [node.name]);

function reduce(opType: string): OpHandler {
  return (b, node, _inputs, raw) => {
    const axes = b.constant(raw[1] ?? '');
    if (axes.length === 0) {
      // TF reduces over nothing on empty axes; ONNX would reduce over everything.
      b.node('Identity', [tensorName(raw[0] ?? '')], [node.name]);
      return;
    }
    const keep = node.attr?.keep_dims?.b === true ? 1 : 0;
    b.node(
      opType,
      [tensorName(raw[0] ?? ''), b.int64(`${node.name}/axes`, axes)],
      [node.name],
      [attribute('keepdims', keep)],
    );
  };
}

function transposeLastTwo(b: OnnxGraphBuilder, input: string, base: string): string {
  const out = b.temp(`${base}/T`);
  b.node(
    'Einsum',
    [input],
    [out],
    [
      {
        name: 'equation',
        type: onnx.AttributeProto.AttributeType.STRING,
        s: new TextEncoder().encode('...ij->...ji'),
      },
    ],
  );
  return out;
}

function matmul(adjA: string, adjB: string): OpHandler {
  return (b, node, inputs) => {
    let [a, c] = inputs as [string, string];
    if (node.attr?.[adjA]?.b === true) a = transposeLastTwo(b, a, node.name);
    if (node.attr?.[adjB]?.b === true) c = transposeLastTwo(b, c, node.name);
    b.node('MatMul', [a, c], [node.name]);
  };
}

const HANDLERS: Readonly<Record<string, OpHandler>> = {
  Add: same('Add'),
  AddV2: same('Add'),
  BiasAdd: (b, node, inputs) => {
    const format = node.attr?.data_format?.s;
    const text = typeof format === 'string' ? format : String.fromCharCode(...(format ?? []));
    if (text !== '' && text !== 'NHWC') throw new Error(`${node.name}: BiasAdd ${text} is not supported`);
    b.node('Add', inputs, [node.name]);
  },
  Sub: same('Sub'),
  Mul: same('Mul'),
  RealDiv: same('Div'),
  Maximum: same('Max'),
  Less: same('Less'),
  Greater: same('Greater'),
  LogicalNot: same('Not'),
  Relu: same('Relu'),
  Sin: same('Sin'),
  Cos: same('Cos'),
  Tanh: same('Tanh'),
  Shape: same('Shape'),
  Range: same('Range'),
  GatherNd: same('GatherND'),
  Softmax: (b, node, inputs) => b.node('Softmax', inputs, [node.name], [attribute('axis', -1)]),
  Square: (b, node, inputs) => b.node('Mul', [inputs[0] ?? '', inputs[0] ?? ''], [node.name]),
  Rsqrt: (b, node, inputs) => {
    const root = b.temp(`${node.name}/sqrt`);
    b.node('Sqrt', inputs, [root]);
    b.node('Reciprocal', [root], [node.name]);
  },
  Cast: (b, node, inputs) => b.node('Cast', inputs, [node.name], [attribute('to', onnxType(node.attr?.DstT?.type))]),
  Reshape: (b, node, inputs) => b.node('Reshape', inputs, [node.name], [attribute('allowzero', 1)]),
  Where: (b, node, inputs) => {
    if (inputs.length !== 1) throw new Error(`${node.name}: three-argument Where is not supported`);
    // TF Where(cond) = coordinates of true elements, [count, rank]; ONNX NonZero gives [rank, count].
    const nonzero = b.temp(`${node.name}/nonzero`);
    b.node('NonZero', inputs, [nonzero]);
    b.node('Transpose', [nonzero], [node.name], [attribute('perm', [1, 0])]);
  },
  GatherV2: (b, node, inputs, raw) => {
    if (int(node.attr?.batch_dims) !== 0) throw new Error(`${node.name}: batch_dims is not supported`);
    const [axis] = b.constant(raw[2] ?? '');
    b.node('Gather', [inputs[0] ?? '', inputs[1] ?? ''], [node.name], [attribute('axis', axis ?? 0)]);
  },
  Max: reduce('ReduceMax'),
  Mean: reduce('ReduceMean'),
  Prod: reduce('ReduceProd'),
  Sum: reduce('ReduceSum'),
  ConcatV2: (b, node, inputs, raw) => {
    const [axis] = b.constant(raw[raw.length - 1] ?? '');
    b.node('Concat', inputs.slice(0, -1), [node.name], [attribute('axis', axis ?? 0)]);
  },
  ExpandDims: (b, node, inputs, raw) => {
    b.node('Unsqueeze', [inputs[0] ?? '', b.int64(`${node.name}/axes`, b.constant(raw[1] ?? ''))], [node.name]);
  },
  Squeeze: (b, node, inputs) => {
    const dims = (node.attr?.squeeze_dims?.list?.i ?? []).map(Number);
    if (dims.length === 0) throw new Error(`${node.name}: Squeeze without explicit dims is not supported`);
    b.node('Squeeze', [inputs[0] ?? '', b.int64(`${node.name}/axes`, dims)], [node.name]);
  },
  Pack: (b, node, inputs) => {
    const axis = int(node.attr?.axis);
    const axes = b.int64(`${node.name}/axes`, [axis]);
    const parts = inputs.map((input) => b.node('Unsqueeze', [input, axes], [b.temp(`${node.name}/part`)])[0] ?? '');
    b.node('Concat', parts, [node.name], [attribute('axis', axis)]);
  },
  Transpose: (b, node, inputs, raw) =>
    b.node('Transpose', [inputs[0] ?? ''], [node.name], [attribute('perm', b.constant(raw[1] ?? ''))]),
  MatMul: matmul('transpose_a', 'transpose_b'),
  BatchMatMul: matmul('adj_x', 'adj_y'),
  BatchMatMulV2: matmul('adj_x', 'adj_y'),
  StridedSlice: (b, node, inputs, raw) => {
    const attr = node.attr ?? {};
    if (int(attr.ellipsis_mask) !== 0 || int(attr.new_axis_mask) !== 0) {
      throw new Error(`${node.name}: ellipsis/new-axis strided slices are not supported`);
    }
    const begin = b.constant(raw[1] ?? '');
    const end = b.constant(raw[2] ?? '');
    const strides = b.constant(raw[3] ?? '');
    const beginMask = int(attr.begin_mask);
    const endMask = int(attr.end_mask);
    const shrinkMask = int(attr.shrink_axis_mask);
    const starts: number[] = [];
    const ends: number[] = [];
    const shrink: number[] = [];
    begin.forEach((start, axis) => {
      if ((strides[axis] ?? 1) !== 1) throw new Error(`${node.name}: strided slices with stride ≠ 1 are not supported`);
      const from = bit(beginMask, axis) ? 0 : start;
      let to = bit(endMask, axis) ? TO_END : (end[axis] ?? TO_END);
      if (bit(shrinkMask, axis)) {
        shrink.push(axis);
        to = from === -1 ? TO_END : from + 1;
      }
      starts.push(from);
      ends.push(to);
    });
    const axes = begin.map((_, axis) => axis);
    const sliceInputs = [
      inputs[0] ?? '',
      b.int64(`${node.name}/starts`, starts),
      b.int64(`${node.name}/ends`, ends),
      b.int64(`${node.name}/axes`, axes),
    ];
    if (shrink.length === 0) {
      b.node('Slice', sliceInputs, [node.name]);
      return;
    }
    const sliced = b.temp(`${node.name}/slice`);
    b.node('Slice', sliceInputs, [sliced]);
    b.node('Squeeze', [sliced, b.int64(`${node.name}/shrink`, shrink)], [node.name]);
  },
  Slice: (b, node, inputs, raw) => {
    const begin = b.constant(raw[1] ?? '');
    const size = b.constant(raw[2] ?? '');
    const ends = begin.map((start, axis) => ((size[axis] ?? -1) === -1 ? TO_END : start + (size[axis] ?? 0)));
    b.node(
      'Slice',
      [
        inputs[0] ?? '',
        b.int64(`${node.name}/starts`, begin),
        b.int64(`${node.name}/ends`, ends),
        b.int64(
          `${node.name}/axes`,
          begin.map((_, axis) => axis),
        ),
      ],
      [node.name],
    );
  },
  SplitV: (b, node, inputs, raw) => {
    const sizes = b.constant(raw[1] ?? '');
    if (sizes.includes(-1)) throw new Error(`${node.name}: SplitV with an inferred size is not supported`);
    const [axis] = b.constant(raw[2] ?? '');
    const outputs = sizes.map((_, k) => (k === 0 ? node.name : `${node.name}:${k}`));
    b.node('Split', [inputs[0] ?? '', b.int64(`${node.name}/split`, sizes)], outputs, [attribute('axis', axis ?? 0)]);
  },
  Conv2D: (b, node, inputs, raw) => {
    // A 1×1, stride-1 convolution over NHWC is a matrix product over the channel axis.
    const filter = b.constantOf(raw[1] ?? '');
    const attr = node.attr ?? {};
    const strides = (attr.strides?.list?.i ?? []).map(Number);
    const dilations = (attr.dilations?.list?.i ?? []).map(Number);
    const format = attr.data_format?.s;
    const text = typeof format === 'string' ? format : String.fromCharCode(...(format ?? []));
    if (
      filter === undefined ||
      filter.shape.length !== 4 ||
      filter.shape[0] !== 1 ||
      filter.shape[1] !== 1 ||
      strides.some((s) => s !== 1) ||
      dilations.some((d) => d !== 1) ||
      (text !== '' && text !== 'NHWC')
    ) {
      throw new Error(`${node.name}: only 1×1 stride-1 NHWC Conv2D with a constant filter is supported`);
    }
    const weights = `${node.name}/kernel2d`;
    b.initializer(weights, {
      ...filter,
      shape: [filter.shape[2] ?? 0, filter.shape[3] ?? 0],
    });
    b.node('MatMul', [inputs[0] ?? '', weights], [node.name]);
  },
  ScatterNd: (b, node, inputs) => {
    const [indices, updates, shape] = inputs as [string, string, string];
    const zero: TensorProto = {
      dims: [1],
      dataType: onnxType(node.attr?.T?.type),
    };
    if (zero.dataType === FLOAT) zero.floatData = [0];
    else zero.int64Data = [0];
    const zeros = b.temp(`${node.name}/zeros`);
    b.node('ConstantOfShape', [shape], [zeros], [attribute('value', zero)]);
    b.node('ScatterND', [zeros, indices, updates], [node.name]);
  },
  SparseToDense: (b, node, inputs) => {
    const [indices, shape, values, fill] = inputs as [string, string, string, string];
    const dense = b.temp(`${node.name}/fill`);
    b.node('Expand', [fill, shape], [dense]);
    b.node('ScatterND', [dense, indices, values], [node.name]);
  },
};

/** Nodes the outputs depend on, in graph order. */
function reachable(nodes: readonly TfNode[], outputs: readonly string[]): TfNode[] {
  const byName = new Map(nodes.map((node) => [node.name, node]));
  const needed = new Set<string>();
  const stack = outputs.map(stripOutput);
  while (stack.length > 0) {
    const name = stack.pop() ?? '';
    if (needed.has(name)) continue;
    const node = byName.get(name);
    if (node === undefined) throw new Error(`graph has no node ${name}`);
    needed.add(name);
    for (const input of node.input ?? []) if (!input.startsWith('^')) stack.push(stripOutput(input));
  }
  return nodes.filter((node) => needed.has(node.name));
}

/** A graph input or output: its name, element type and dims (a number, or a symbolic name). */
export function valueInfo(
  name: string,
  elemType: number,
  dims: readonly (number | string)[],
): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: {
          dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })),
        },
      },
    },
  };
}

/** Converts the part of `graph` that feeds `options.outputs`; returns the serialised ONNX ModelProto. */
export function convertTfGraph(graph: TfGraph, options: ConvertOptions): Uint8Array {
  const b = new OnnxGraphBuilder(graph.constants);
  const inputNames = new Set(options.inputs.map((input) => input.name));
  const graphInputs = options.inputs.map((input) => valueInfo(input.name, INT32, input.dims));
  for (const node of reachable(
    graph.nodes,
    options.outputs.map((output) => output.tensor),
  )) {
    if (node.op === 'Placeholder') {
      if (!inputNames.has(node.name)) throw new Error(`graph input ${node.name} was not declared`);
      continue;
    }
    if (node.op === 'Const') continue; // emitted below, only where a node reads it as a tensor
    const handler = HANDLERS[node.op];
    if (handler === undefined) throw new Error(`TF op ${node.op} (${node.name}) has no ONNX mapping`);
    const raw = (node.input ?? []).filter((input) => !input.startsWith('^'));
    const inputs = raw.map((input) => (inputNames.has(input) ? `${input}__int64` : tensorName(input)));
    handler(b, node, inputs, raw);
  }
  // Placeholders are int32 as in TF; widen once (see the int64 convention above).
  const widen = options.inputs.map((input) => ({
    opType: 'Cast',
    input: [input.name],
    output: [`${input.name}__int64`],
    name: `${input.name}__int64`,
    attribute: [attribute('to', INT64)],
  }));
  const outputs = options.outputs.map((output) => {
    // An output named after the tensor that feeds it needs no Identity (and a second producer would be invalid).
    if (output.name !== tensorName(output.tensor)) b.node('Identity', [tensorName(output.tensor)], [output.name]);
    return valueInfo(output.name, FLOAT, output.dims);
  });
  const read = new Set(b.nodes.flatMap((node) => node.input ?? []));
  for (const node of graph.nodes) {
    const constant = graph.constants.get(node.name);
    if (node.op === 'Const' && read.has(node.name) && constant !== undefined) b.initializer(node.name, constant);
  }
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: options.producer,
    opsetImport: [{ domain: '', version: OPSET }],
    graph: {
      name: 'converted',
      input: graphInputs,
      output: outputs,
      initializer: b.initializers,
      node: [...widen, ...b.nodes],
    },
  });
  return onnx.ModelProto.encode(model).finish();
}
