import { join } from 'node:path';
import type { CorpusSettings } from '../../src/corpus/corpus.js';
import { readManifest } from '../../src/models/manifest.js';
import { BertEncoder } from '../../src/models/onnx/bert.js';
import { writeFixture } from '../fixtures/bert-models.js';

/** What the corpus tests open a Corpus with: a generated BERT-shaped encoder and small, fast settings. */
export const SILENT = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** The encoder's log: whatever it is given, it writes through these three. */
type Log = ConstructorParameters<typeof BertEncoder>[2]['log'];

/** A generated encoder (fixtures/bert-models.ts) written under `root`, batching nothing (maxWaitMs 0). */
export function fixtureEncoder(root: string, log: Log = SILENT): BertEncoder {
  writeFixture(join(root, 'encoder'), { kind: 'encoder', maxTokens: 32 });
  return new BertEncoder(
    join(root, 'encoder'),
    readManifest(join(root, 'encoder')),
    { intraOpThreads: 1, log },
    { maxWaitMs: 0, maxBatchTokens: 8192, maxBatchItems: 64, maxQueuedItems: 1024 },
  );
}

/** A corpus in `root/dir`: cosine HNSW (m 16), 10 KB documents, BM25 defaults, no fields unless overridden. */
export function corpusSettings(root: string, dir: string, overrides: Partial<CorpusSettings> = {}): CorpusSettings {
  return {
    dir: join(root, dir),
    space: 'cosine',
    m: 16,
    efConstruction: 100,
    efSearch: 32,
    saveIntervalMs: 60_000,
    maxDocumentBytes: 10_000,
    metadata: { maxBytes: 64 * 1024, maxDepth: 8 },
    fields: {},
    bm25: { k1: 1.2, b: 0.75, stem: true },
    ...overrides,
  };
}
