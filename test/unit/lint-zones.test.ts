import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: the lint configuration is plain JavaScript without declarations.
import { LAYERS } from '../../eslint.config.js';

/**
 * docs/architecture.md §3 layering, proved: the layer rule (eslint/layers.js) passes every import of every file under
 * src/, and each import a room must not make, at any depth, is refused while the imports it may make are not.
 * Linted with the layer rule alone, without type information.
 */
const ROOT = join(import.meta.dirname, '../..');
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfigFile: true,
  overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } }, LAYERS as object],
});

async function restricted(file: string, specifier: string): Promise<boolean> {
  const [result] = await eslint.lintText(`import '${specifier}';\n`, { filePath: join(ROOT, file) });
  return (result?.messages ?? []).some((message) => message.ruleId === 'layers/imports');
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [relative(ROOT, path)] : [];
  });
}

const FORBIDDEN: [string, string][] = [
  ['src/protocol/session.ts', '../transport/http.js'],
  ['src/protocol/session.ts', '../models/index.js'],
  ['src/protocol/schemas/results.ts', '../../config/index.js'],
  ['src/protocol/session.ts', 'fastify'],
  ['src/protocol/session.ts', 'better-sqlite3'],
  ['src/transport/http-sessions.ts', 'pg'],
  ['src/methods/index-write.ts', 'pg'],
  ['src/transport/http.ts', '../methods/retrieve.js'],
  ['src/transport/http.ts', '../models/index.js'],
  ['src/transport/http.ts', 'onnxruntime-node'],
  ['src/methods/content.ts', 'http'],
  ['src/methods/retrieve.ts', '../models/models.js'],
  ['src/methods/retrieve.ts', '../models/inference-queue.js'],
  ['src/methods/retrieve.ts', '../corpus/corpus.js'],
  ['src/methods/retrieve.ts', '../corpus/ports.js'],
  ['src/methods/retrieve.ts', '../transport/http.js'],
  ['src/methods/retrieve.ts', 'fastify'],
  ['src/methods/retrieve.ts', '@fastify/cors'],
  ['src/retrieval/fusion.ts', '../models/inference-queue.js'],
  ['src/retrieval/fusion.ts', '../platform/worker-thread.js'],
  ['src/retrieval/fusion.ts', '../content/index.js'],
  ['src/retrieval/fusion.ts', '../methods/retrieve.js'],
  // At any depth: the store's PostgreSQL adapter three folders down.
  ['src/corpus/store/postgres/postgres-store.ts', '../../../transport/http.js'],
  ['src/corpus/store/postgres/postgres-store.ts', '../../../app.js'],
  ['src/corpus/store/postgres/postgres-store.ts', '../../../config/index.js'],
  ['src/corpus/store/postgres/postgres-store.ts', '../../../retrieval/fusion.js'],
  ['src/corpus/store/postgres/postgres-store.ts', '../../../models/onnx/bert.js'],
  ['src/corpus/store/postgres/postgres-store.ts', 'onnxruntime-node'],
  ['src/corpus/store/corpus-store.ts', '../../transport/http.js'],
  ['src/corpus/store/corpus-store.ts', 'pg'],
  ['src/corpus/hnsw/dense-index.ts', 'better-sqlite3'],
  ['src/corpus/corpus.ts', '../models/inference-queue.js'],
  ['src/models/models.ts', '../retrieval/fusion.js'],
  ['src/models/models.ts', '../corpus/index.js'],
  ['src/models/models.ts', 'fastify'],
  ['src/models/models.ts', 'hnswlib-node'],
  ['src/models/onnx/model-host.ts', '../../transport/http.js'],
  ['src/content/uri-fetcher.ts', 'fastify'],
  ['src/content/uri-fetcher.ts', '../corpus/index.js'],
  ['src/platform/worker-thread.ts', '../models/index.js'],
  ['src/client/index.ts', '../app.js'],
  ['src/client/index.ts', '../config/index.js'],
  ['src/client/index.ts', '../transport/http.js'],
  ['src/client/index.ts', 'fastify'],
  ['src/ingest/ingest.ts', '../transport/http.js'],
  ['src/ingest/ingest.ts', '../methods/retrieve.js'],
  ['src/ingest/ingest.ts', '../corpus/corpus.js'],
  ['src/eval.ts', './transport/http.js'],
  ['src/retrieval/filter.ts', '../config/index.js'],
  ['src/methods/retrieve.ts', '../app.js'],
  ['src/corpus/store/corpus-store.ts', '../../config/index.js'],
  ['src/transport/http.ts', '../metrics.js'],
  ['src/metrics.ts', 'fastify'],
  ['src/metrics.ts', './models/models.js'],
  ['src/methods/retrieve.ts', 'ioredis'],
  ['src/models/models.ts', 'ioredis'],
  ['src/gateway/engine.ts', '../transport/stdio.js'],
  ['src/gateway/engine.ts', '../models/index.js'],
  ['src/gateway/engine.ts', 'node:http'],
  ['src/gateway/federation.ts', '../methods/retrieve.js'],
  ['src/gateway/gateway.ts', 'fastify'],
  ['src/gateway/gateway.ts', '../config/schema.js'],
  ['src/gateway/gateway.ts', '../main.js'],
  ['src/methods/retrieve.ts', '../gateway/engine.js'],
  ['src/transport/http.ts', '../gateway/gateway.js'],
  ['src/client/index.ts', '../gateway/engine.js'],
  ['src/transport/mcp.ts', '../client/index.js'],
  ['src/transport/mcp.ts', '../client/channel.js'],
  ['src/transport/mcp.ts', '../methods/retrieve.js'],
  ['src/transport/http.ts', '../client/requester.js'],
  ['src/eval.ts', './client/index.js'],
  ['src/metrics.ts', './client/requester.js'],
  // The eval's and the MCP bridge's allowance is that one file, not its room.
  ['src/eval.ts', './client/channel.js'],
  ['src/transport/mcp.ts', '../client/retry.js'],
  // A folder the table does not name is refused until it is named.
  ['src/newroom/thing.ts', '../protocol/errors.js'],
];

const ALLOWED: [string, string][] = [
  ['src/gateway/federation.ts', './forwarding.js'],
  ['src/methods/retrieve.ts', '../models/index.js'],
  ['src/methods/retrieve.ts', '../corpus/index.js'],
  ['src/methods/content.ts', '../content/index.js'],
  ['src/methods/retrieve.ts', '../protocol/errors.js'],
  ['src/retrieval/fusion.ts', '../corpus/index.js'],
  ['src/protocol/schemas/results.ts', '../method-table.js'],
  ['src/content/uri-fetcher.ts', 'node:http'],
  ['src/corpus/store/corpus-store.ts', 'better-sqlite3'],
  ['src/corpus/store/postgres/postgres-store.ts', 'pg'],
  ['src/corpus/store/postgres/postgres-store.ts', '../../../protocol/errors.js'],
  ['src/corpus/store/postgres/postgres-store.ts', '../../../models/index.js'],
  ['src/corpus/hnsw/dense-index.ts', '../../platform/worker-thread.js'],
  ['src/models/onnx/model-host.ts', 'onnxruntime-node'],
  ['src/transport/redis-bucket-store.ts', 'ioredis'],
  ['src/client/index.ts', '../protocol/codes.js'],
  ['src/ingest/ingest.ts', '../corpus/index.js'],
  ['src/gateway/engine.ts', '../client/channel.js'],
  ['src/gateway/federated-fusion.ts', '../protocol/messages.js'],
  ['src/gateway/gateway.ts', '../app.js'],
  ['src/gateway/gateway.ts', '../config/index.js'],
  ['src/app.ts', './corpus/index.js'],
  ['src/transport/mcp.ts', '../client/requester.js'],
  ['src/eval.ts', './client/requester.js'],
];

describe('lint zones (docs/architecture.md §3)', () => {
  it('every import of every file under src/ keeps to the layers', async () => {
    const files = sourceFiles(join(ROOT, 'src'));
    const results = await eslint.lintFiles(files);
    const refused = results.flatMap((result) =>
      result.messages.map((message) => `${relative(ROOT, result.filePath)}:${message.line} ${message.message}`),
    );
    expect(refused).toEqual([]);
    expect(results.map((result) => relative(ROOT, result.filePath)).sort()).toEqual(files.sort());
    expect(files.length).toBeGreaterThan(150);
  });

  it.each(FORBIDDEN)('%s may not import %s', async (file, specifier) => {
    expect(await restricted(file, specifier)).toBe(true);
  });

  it.each(ALLOWED)('%s may import %s', async (file, specifier) => {
    expect(await restricted(file, specifier)).toBe(false);
  });
});
