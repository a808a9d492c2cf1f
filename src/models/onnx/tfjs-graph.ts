/**
 * Reader for a TF.js graph model (`model.json` + binary weight shards): the node list and every constant, decoded.
 * Only what the default encoder's package ships is supported (float32 and int32 weights, no quantisation); anything
 * else is refused with a clear error rather than mis-read.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface TfAttr {
  readonly i?: string | number;
  readonly b?: boolean;
  readonly f?: number;
  readonly s?: readonly number[] | string;
  readonly type?: number | string;
  readonly list?: { readonly i?: readonly (string | number)[] };
}

export interface TfNode {
  readonly name: string;
  readonly op: string;
  readonly input?: readonly string[];
  readonly attr?: Readonly<Record<string, TfAttr>>;
}

export interface TfConstant {
  readonly dtype: 'float32' | 'int32';
  readonly shape: readonly number[];
  readonly data: Float32Array | Int32Array;
}

export interface TfGraph {
  readonly nodes: readonly TfNode[];
  readonly constants: ReadonlyMap<string, TfConstant>;
}

interface WeightSpec {
  readonly name: string;
  readonly shape: readonly number[];
  readonly dtype: string;
  readonly quantization?: unknown;
}

interface ModelJson {
  readonly modelTopology: { readonly node: readonly TfNode[] };
  readonly weightsManifest: readonly {
    readonly paths: readonly string[];
    readonly weights: readonly WeightSpec[];
  }[];
}

/** The files a graph model consists of, relative to its directory (for hashing and copying). */
export async function graphModelFiles(dir: string): Promise<string[]> {
  const model = JSON.parse(await readFile(join(dir, 'model.json'), 'utf8')) as ModelJson;
  return ['model.json', ...model.weightsManifest.flatMap((group) => group.paths)];
}

export async function readTfGraph(dir: string): Promise<TfGraph> {
  const model = JSON.parse(await readFile(join(dir, 'model.json'), 'utf8')) as ModelJson;
  const constants = new Map<string, TfConstant>();
  for (const group of model.weightsManifest) {
    const shards = await Promise.all(group.paths.map((path) => readFile(join(dir, path))));
    const buffer = Buffer.concat(shards);
    let offset = 0;
    for (const spec of group.weights) {
      if (spec.quantization !== undefined) throw new Error(`quantized weight ${spec.name} is not supported`);
      if (spec.dtype !== 'float32' && spec.dtype !== 'int32') {
        throw new Error(`weight ${spec.name} has unsupported dtype ${spec.dtype}`);
      }
      const count = spec.shape.reduce((a, b) => a * b, 1);
      const bytes = buffer.subarray(offset, offset + count * 4);
      if (bytes.length !== count * 4) throw new Error(`weight shards end before ${spec.name}`);
      // Copy into an aligned buffer: shard offsets need not be 4-byte aligned within the Node buffer pool.
      const aligned = new Uint8Array(bytes).buffer;
      const data = spec.dtype === 'float32' ? new Float32Array(aligned) : new Int32Array(aligned);
      constants.set(spec.name, { dtype: spec.dtype, shape: spec.shape, data });
      offset += count * 4;
    }
    if (offset !== buffer.length) throw new Error(`weight shards hold ${buffer.length - offset} unread bytes`);
  }
  return { nodes: model.modelTopology.node, constants };
}
