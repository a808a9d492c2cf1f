import { join } from 'node:path';
import type { CorpusSettings } from '../../src/corpus/corpus.js';
import { readManifest } from '../../src/models/manifest.js';
import { UseLiteEncoder } from '../../src/models/onnx/use-lite-encoder.js';
import { silentLogger } from '../helpers/logger.js';
import { ROOT } from '../helpers/wire.js';

/** What the crash tests reopen a killed server's data dir with: the default encoder and the server's own settings. */
export const ENCODER_DIR = join(ROOT, 'models', 'use-lite');

export function crashEncoder(): UseLiteEncoder {
  return new UseLiteEncoder(
    ENCODER_DIR,
    readManifest(ENCODER_DIR),
    { intraOpThreads: 1, log: silentLogger },
    { maxWaitMs: 0, maxBatchTokens: 16_384, maxBatchItems: 64, maxQueuedItems: 4096 },
  );
}

export function crashSettings(dir: string): CorpusSettings {
  return {
    dir,
    space: 'cosine',
    m: 16,
    efConstruction: 100,
    efSearch: 32,
    saveIntervalMs: 60_000,
    maxDocumentBytes: 1 << 20,
    metadata: { maxBytes: 64 * 1024, maxDepth: 8 },
    fields: {},
    bm25: { k1: 1.2, b: 0.75, stem: true },
  };
}
