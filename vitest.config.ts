import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Needs material from outside the repository: `npm run test:conformance`.
    exclude: ['test/conformance/**', '**/node_modules/**'],
    globalSetup: ['test/setup/default-model.ts'],
    // Hang guards, not performance assertions: on a loaded 2-core machine a test that starts several server
    // processes (each loading a model) can take well over 30 s. What a test measures, it asserts itself.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Two cores: wire tests spawn child servers, so keep parallelism modest.
    maxWorkers: 2,
  },
});
