import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/default-model.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores: wire tests spawn child servers, so keep parallelism modest.
    maxWorkers: 2,
  },
});
