// @ts-check
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const FRAMEWORKS = {
  group: ['fastify', '@fastify/*', 'node:http'],
  message: 'Only the HTTP transport and app.ts use Fastify.',
};
const NATIVE = {
  group: ['onnxruntime-node', 'hnswlib-node', 'better-sqlite3', 'pg'],
  message: 'A native library or database driver belongs to its adapter under src/backend/<adapter>/.',
};

/**
 * The composition and process files at src/ top level (with the CLI's commands under src/cli/), and the gateway's
 * composition: no layer below may import one.
 */
const TOP = ['app.js', 'main.js', 'cli.js', 'cli/**', 'config.js', 'eval.js', 'metrics.js', 'gateway*'];
const IOREDIS = {
  group: ['ioredis'],
  message: 'Only the Redis bucket store (src/transport/redis-bucket-store.ts) uses ioredis.',
};

/**
 * A zone: files matching `files` may not import the src/ paths in `forbid` (globs relative to src/, e.g.
 * `backend/*`), except those in `allow`, nor the given packages. Paths are matched as written in the import, from
 * src/ itself or one or two folders down.
 */
function zone(files, { forbid, allow = [] }, ...packages) {
  const from = (path) => [`./${path}`, `../${path}`, `../../${path}`];
  const folders = forbid.map((path) => ({
    group: [...from(path), ...allow.flatMap(from).map((allowed) => `!${allowed}`)],
    message: `docs/architecture.md §3 layering: ${files} must not import src/${path}${allow.length > 0 ? ` (only ${allow.join(', ')})` : ''}`,
  }));
  return { files: [files], rules: { 'no-restricted-imports': ['error', { patterns: [...folders, ...packages] }] } };
}

/**
 * docs/architecture.md §3: the dependency direction, enforced folder by folder (test/unit/lint-zones.test.ts tries
 * each hole).
 */
export const ZONES = [
  zone(
    'src/protocol/**',
    { forbid: ['transport*', 'methods*', 'retrieval*', 'backend*', 'client*', 'ingest*', ...TOP] },
    FRAMEWORKS,
    NATIVE,
    IOREDIS,
  ),
  zone('src/transport/**', { forbid: ['methods*', 'retrieval*', 'backend*', 'client*', 'ingest*', ...TOP] }, NATIVE),
  // Methods reach the backend through its ports only: never a model adapter, queue or worker.
  zone(
    'src/methods/**',
    { forbid: ['transport*', 'backend/**', 'client*', 'ingest*', ...TOP], allow: ['backend/ports.js'] },
    FRAMEWORKS,
    NATIVE,
    IOREDIS,
  ),
  zone(
    'src/retrieval/**',
    { forbid: ['transport*', 'methods*', 'backend/**', 'client*', 'ingest*', ...TOP], allow: ['backend/ports.js'] },
    FRAMEWORKS,
    NATIVE,
    IOREDIS,
  ),
  zone(
    'src/backend/**',
    { forbid: ['transport*', 'methods*', 'retrieval*', 'client*', 'ingest*', ...TOP] },
    FRAMEWORKS,
    IOREDIS,
  ),
  // An HTTP *client* may use node:http, never Fastify: the Content uri fetcher (it pins the checked address, §15.5).
  zone(
    'src/backend/content/**',
    { forbid: ['transport*', 'methods*', 'retrieval*', 'client*', 'ingest*', ...TOP] },
    {
      ...FRAMEWORKS,
      group: ['fastify', '@fastify/*'],
    },
    IOREDIS,
  ),
  // The typed client is a published entry point: the protocol's shared facts, nothing of the server.
  zone(
    'src/client/**',
    { forbid: ['transport*', 'methods*', 'retrieval*', 'backend*', 'ingest*', ...TOP] },
    FRAMEWORKS,
    NATIVE,
    IOREDIS,
  ),
  // The gateway (§16) is a composition of its own: an RCP server to its clients (protocol, the app it builds) and an
  // RCP client to its engines through the typed client's transports. Never a
  // transport's internals, a backend adapter or a native library; its engine links are the client's, not node:http.
  zone(
    'src/gateway/**',
    {
      forbid: [
        'transport*',
        'backend/**',
        'methods/**',
        'ingest*',
        'main.js',
        'cli.js',
        'cli/**',
        'eval.js',
        'metrics.js',
      ],
      allow: ['backend/ports.js'],
    },
    FRAMEWORKS,
    NATIVE,
    IOREDIS,
  ),
  zone('src/ingest/**', { forbid: ['transport*', 'methods*', 'retrieval*', 'client*'] }, FRAMEWORKS, NATIVE, IOREDIS),
  zone('src/{eval,metrics}.ts', { forbid: ['transport/**', 'client/**', 'ingest/**'] }, FRAMEWORKS, NATIVE, IOREDIS),
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'indexes/**', 'models/**/*.onnx'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['eslint.config.js', 'bin/*.js', 'scripts/*.mjs'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { globals: globals.node },
  },
  {
    // docs/architecture.md §3: stdout carries protocol frames only (§5.1); logs go to stderr through the logger.
    files: ['src/**/*.ts'],
    rules: { 'no-console': 'error', '@typescript-eslint/no-explicit-any': 'error' },
  },
  ...ZONES,
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
    },
  },
);
