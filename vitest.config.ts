import { defineConfig } from 'vitest/config';

/** RCP_TEST_REPORT=FILE adds a JSON report of the run (CI counts passed, failed and skipped tests from it). */
const report = process.env.RCP_TEST_REPORT;

/** `npm test`: everything it needs is in the repository or made by the tests; nothing is read from beside it. */
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Needs material from outside the repository: `npm run test:conformance`.
    exclude: ['test/conformance/**', '**/node_modules/**'],
    reporters: report === undefined ? ['default'] : ['default', ['json', { outputFile: report }]],
    globalSetup: ['test/setup/default-model.ts'],
    // Hang guards, not performance assertions: on a loaded 2-core machine a test that starts several server
    // processes (each loading a model) can take well over 30 s. What a test measures, it asserts itself.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Two cores: wire tests spawn child servers, so keep parallelism modest.
    maxWorkers: 2,
  },
});
