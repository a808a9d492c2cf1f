import { join } from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: the lint configuration is plain JavaScript without declarations.
import { ZONES } from '../../eslint.config.js';

/**
 * docs/architecture.md §3 layering, proved: each import a layer must not make is a lint error, and the imports it may
 * make are not. Linted as if each line were in a file of that folder (the zones alone, without type information).
 */
const ROOT = join(import.meta.dirname, '../..');
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfigFile: true,
  overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } }, ...(ZONES as object[])],
});

async function restricted(file: string, specifier: string): Promise<boolean> {
  const [result] = await eslint.lintText(`import '${specifier}';\n`, { filePath: join(ROOT, file) });
  return (result?.messages ?? []).some((message) => message.ruleId === 'no-restricted-imports');
}

const FORBIDDEN: [string, string][] = [
  ['src/protocol/session.ts', '../transport/http.js'],
  ['src/protocol/session.ts', '../backend/ports.js'],
  ['src/protocol/schemas/results.ts', '../../config.js'],
  ['src/protocol/session.ts', 'fastify'],
  ['src/protocol/session.ts', 'better-sqlite3'],
  ['src/transport/http-sessions.ts', 'pg'],
  ['src/methods/index-write.ts', 'pg'],
  ['src/transport/http.ts', '../methods/retrieve.js'],
  ['src/transport/http.ts', '../backend/models.js'],
  ['src/transport/http.ts', 'onnxruntime-node'],
  ['src/methods/retrieve.ts', '../backend/models.js'],
  ['src/methods/retrieve.ts', '../backend/inference-queue.js'],
  ['src/methods/retrieve.ts', '../backend/corpus/corpus.js'],
  ['src/methods/retrieve.ts', '../transport/http.js'],
  ['src/methods/retrieve.ts', 'fastify'],
  ['src/retrieval/fusion.ts', '../backend/inference-queue.js'],
  ['src/retrieval/fusion.ts', '../backend/worker-thread.js'],
  ['src/retrieval/fusion.ts', '../methods/retrieve.js'],
  ['src/backend/store/corpus-store.ts', '../../transport/http.js'],
  ['src/backend/models.ts', '../retrieval/fusion.js'],
  ['src/backend/models.ts', 'fastify'],
  ['src/backend/content/uri-fetcher.ts', 'fastify'],
  ['src/client/index.ts', '../app.js'],
  ['src/client/index.ts', '../config.js'],
  ['src/client/index.ts', '../transport/http.js'],
  ['src/client/index.ts', 'fastify'],
  ['src/ingest/ingest.ts', '../transport/http.js'],
  ['src/ingest/ingest.ts', '../methods/retrieve.js'],
  ['src/eval.ts', './transport/http.js'],
  ['src/retrieval/filter.ts', '../config.js'],
  ['src/methods/retrieve.ts', '../app.js'],
  ['src/backend/store/corpus-store.ts', '../../config.js'],
  ['src/transport/http.ts', '../metrics.js'],
  ['src/metrics.ts', 'fastify'],
  ['src/methods/retrieve.ts', 'ioredis'],
  ['src/backend/models.ts', 'ioredis'],
  ['src/gateway/engine.ts', '../transport/stdio.js'],
  ['src/gateway/engine.ts', '../backend/models.js'],
  ['src/gateway/engine.ts', 'node:http'],
  ['src/gateway/federation.ts', '../methods/retrieve.js'],
  ['src/gateway/gateway.ts', 'fastify'],
  ['src/gateway/gateway.ts', '../main.js'],
  ['src/methods/retrieve.ts', '../gateway/engine.js'],
  ['src/transport/http.ts', '../gateway/gateway.js'],
  ['src/client/index.ts', '../gateway/engine.js'],
];

const ALLOWED: [string, string][] = [
  ['src/gateway/federation.ts', './forwarding.js'],
  ['src/methods/retrieve.ts', '../backend/ports.js'],
  ['src/methods/retrieve.ts', '../protocol/errors.js'],
  ['src/retrieval/fusion.ts', '../backend/ports.js'],
  ['src/protocol/schemas/results.ts', '../method-table.js'],
  ['src/backend/content/uri-fetcher.ts', 'node:http'],
  ['src/backend/store/corpus-store.ts', 'better-sqlite3'],
  ['src/backend/store/postgres/postgres-store.ts', 'pg'],
  ['src/transport/redis-bucket-store.ts', 'ioredis'],
  ['src/client/index.ts', '../protocol/codes.js'],
  ['src/ingest/ingest.ts', '../backend/corpus/corpus.js'],
  ['src/gateway/engine.ts', '../client/channel.js'],
  ['src/gateway/engine.ts', '../backend/ports.js'],
  ['src/gateway/federated-fusion.ts', '../protocol/messages.js'],
  ['src/gateway/gateway.ts', '../app.js'],
  ['src/gateway/gateway.ts', '../config.js'],
];

describe('lint zones (docs/architecture.md §3)', () => {
  it.each(FORBIDDEN)('%s may not import %s', async (file, specifier) => {
    expect(await restricted(file, specifier)).toBe(true);
  });

  it.each(ALLOWED)('%s may import %s', async (file, specifier) => {
    expect(await restricted(file, specifier)).toBe(false);
  });
});
