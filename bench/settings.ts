import { fileURLToPath } from 'node:url';
import type { CorpusSettings } from '../src/corpus/corpus.js';
import { readManifest } from '../src/models/manifest.js';
import { defaultConfig } from '../src/config/index.js';
import { UseLiteEncoder } from '../src/models/onnx/use-lite-encoder.js';
import { intraOpThreads } from '../src/models/models.js';
import { silentLogger } from '../test/helpers/logger.js';

/** The corpus settings every bench uses: the server's defaults (`index.*`), with saves left to close. */
export function benchCorpusSettings(dir: string): CorpusSettings {
  const index = defaultConfig().index;
  const { space, m, efConstruction, efSearch, maxDocumentBytes, maxMetadataBytes, maxMetadataDepth, fields, bm25 } =
    index;
  return {
    dir,
    space,
    m,
    efConstruction,
    // RCP_BENCH_EF tries another efSearch without touching the server's default.
    efSearch: Number(process.env.RCP_BENCH_EF ?? efSearch),
    saveIntervalMs: 3_600_000,
    maxDocumentBytes,
    metadata: { maxBytes: maxMetadataBytes, maxDepth: maxMetadataDepth },
    fields,
    bm25,
    chunkCacheBytes: index.chunkCacheBytes,
  };
}

/** The default encoder, opened directly (no server) with a queue that never refuses a bench's batches. */
export async function benchEncoder(): Promise<UseLiteEncoder> {
  const dir = fileURLToPath(new URL('../models/use-lite', import.meta.url));
  const queue = { maxWaitMs: 0, maxBatchTokens: 1 << 16, maxBatchItems: 64, maxQueuedItems: 1 << 16 };
  const encoder = new UseLiteEncoder(
    dir,
    readManifest(dir),
    { intraOpThreads: intraOpThreads(0), log: silentLogger },
    queue,
  );
  await encoder.loaded;
  return encoder;
}
