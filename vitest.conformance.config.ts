import { defineConfig } from 'vitest/config';

/** `npm run test:conformance`: what needs material from outside the repository (paths given by the environment). */
export default defineConfig({
  test: {
    include: ['test/conformance/**/*.test.ts'],
    globalSetup: ['test/setup/default-model.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    maxWorkers: 2,
  },
});
