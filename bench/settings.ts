import { fileURLToPath } from 'node:url';
import type { CorpusSettings } from '../src/backend/corpus/corpus.js';
import { readManifest } from '../src/backend/manifest.js';
import { UseLiteEncoder } from '../src/backend/onnx/use-lite-encoder.js';

/** The corpus settings every bench uses: the server's defaults, with saves left to close. */
export function benchCorpusSettings(dir: string): CorpusSettings {
  return {
    dir,
    space: 'cosine',
    m: 16,
    efConstruction: 200,
    // RCP_BENCH_EF tries another efSearch without touching the server's default.
    efSearch: Number(process.env.RCP_BENCH_EF ?? 100),
    saveIntervalMs: 3_600_000,
    maxDocumentBytes: 1 << 20,
    metadata: { maxBytes: 64 * 1024, maxDepth: 8 },
    fields: {},
    bm25: { k1: 1.2, b: 0.75, stem: true },
  };
}

/** The default encoder, opened directly (no server) with a queue that never refuses a bench's batches. */
export async function benchEncoder(): Promise<UseLiteEncoder> {
  const dir = fileURLToPath(new URL('../models/use-lite', import.meta.url));
  const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const queue = { maxWaitMs: 0, maxBatchTokens: 1 << 16, maxBatchItems: 64, maxQueuedItems: 1 << 16 };
  const encoder = new UseLiteEncoder(dir, readManifest(dir), { intraOpThreads: 0, log: silent }, queue);
  await encoder.loaded;
  return encoder;
}
