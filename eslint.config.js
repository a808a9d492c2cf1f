// @ts-check
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

import { layers } from './eslint/layers.js';

/**
 * docs/architecture.md §3: the dependency direction (eslint/layers.js), on every import of every file under src/;
 * test/unit/lint-zones.test.ts runs it over the whole tree and tries each hole.
 */
export const LAYERS = { files: ['src/**/*.ts'], plugins: { layers }, rules: { 'layers/imports': 'error' } };

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'indexes/**', 'models/**/*.onnx'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['eslint.config.js', 'eslint/*.js', 'bin/*.js', 'scripts/*.mjs', 'test/helpers/*.mjs'] },
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
  LAYERS,
  {
    // docs/architecture.md §2: a function fits on a screen.
    files: ['src/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80, IIFEs: true }] },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
    },
  },
);
