import { describe, expect, it } from 'vitest';
import type { Encoder } from '../../../../src/models/index.js';
import type { CorpusReader, CorpusWriter } from '../../../../src/corpus/index.js';
import type { ContentReader } from '../../../../src/methods/content.js';
import { embedMethod } from '../../../../src/methods/embed.js';
import { embedSparseMethod } from '../../../../src/methods/embed-sparse.js';
import { indexMethods } from '../../../../src/methods/index-write.js';
import type { DocumentBodies } from '../../../../src/methods/document-bodies.js';
import { rerankMethod } from '../../../../src/methods/rerank.js';
import {
  EmbedParams,
  EmbedSparseParams,
  IndexAddParams,
  IndexDeleteParams,
  RerankParams,
} from '../../../../src/protocol/schemas/params.js';

/**
 * docs/architecture.md "Declared once": the params a method validates with are the very TypeBox declaration the
 * typed client's types are `Static` of, not a copy that could drift from it.
 */
describe('the params of the methods the typed client calls', () => {
  const content = {} as ContentReader;
  const encoder = { info: { dimension: 3, identity: 'test', normalized: true } } as Encoder;

  it('are validated with their one declaration in protocol/schemas/params.ts', () => {
    const [embed] = embedMethod(encoder, { batchLimit: 1, content });
    const [sparse] = embedSparseMethod({} as CorpusReader, {
      batchLimit: 1,
      content,
      bm25: { k1: 1.2, b: 0.75, stem: true },
      maxTextBytes: 1,
    });
    const reranker = { method: 'colbert', model: 'test', score: () => Promise.resolve(new Float32Array(0)) } as const;
    const [rerank] = rerankMethod([reranker], { maxCandidates: 1, maxQueryChars: 1, content });
    const [[add], [remove]] = indexMethods({} as CorpusWriter, { writable: true, maxDocuments: 1 }, {} as DocumentBodies);
    expect(embed.params).toBe(EmbedParams);
    expect(sparse.params).toBe(EmbedSparseParams);
    expect(rerank.params).toBe(RerankParams);
    expect(add.params).toBe(IndexAddParams);
    expect(remove.params).toBe(IndexDeleteParams);
  });
});
