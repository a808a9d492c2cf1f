// @ts-check
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const FRAMEWORKS = {
  group: ['fastify', '@fastify/*', 'node:http'],
  message: 'Only the HTTP transport and app.ts use Fastify.',
};
const NATIVE = {
  group: ['onnxruntime-node', 'hnswlib-node', 'better-sqlite3'],
  message: 'A native library belongs to its adapter under src/backend/<adapter>/.',
};

/** Files matching `files` may not import the sibling folders named in `forbidden` (nor the given packages). */
function layer(files, forbidden, ...packages) {
  const folders = forbidden.map((folder) => ({
    group: [`../${folder}*`, `../../${folder}*`],
    message: `DESIGN §1 layering: ${files} must not import src/${folder}`,
  }));
  return { files: [files], rules: { 'no-restricted-imports': ['error', { patterns: [...folders, ...packages] }] } };
}

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
    // DESIGN §1: stdout carries protocol frames only (§5.1); logs go to stderr through the logger.
    files: ['src/**/*.ts'],
    rules: { 'no-console': 'error', '@typescript-eslint/no-explicit-any': 'error' },
  },
  // DESIGN §1: the dependency direction, enforced folder by folder.
  layer('src/protocol/**', ['transport', 'methods', 'retrieval', 'backend'], FRAMEWORKS, NATIVE),
  layer('src/transport/**', ['methods', 'retrieval', 'backend'], NATIVE),
  layer('src/methods/**', ['transport', 'backend/*/'], FRAMEWORKS, NATIVE),
  layer('src/retrieval/**', ['transport', 'methods', 'backend/*/'], FRAMEWORKS, NATIVE),
  layer('src/backend/**', ['transport', 'methods', 'retrieval'], FRAMEWORKS),
  // HTTP *clients* may use node:http, never Fastify: the Content uri fetcher (it pins the checked address, §15.5) and
  // the federation links to other engines (§16).
  layer('src/backend/{content,federation}/**', ['transport', 'methods', 'retrieval'], {
    ...FRAMEWORKS,
    group: ['fastify', '@fastify/*'],
  }),
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
    },
  },
);
