import { defineConfig } from 'vitest/config';

/**
 * `npm run test:conformance`: what needs material from outside the repository — the normative schema (RCP_SCHEMA,
 * default ../shared/rcp/schema/rcp-1.0.json), the frames `npm test` recorded (RCP_RECORDED_FRAMES) and a checkout
 * of the upstream harness and SDKs (RCP_UPSTREAM), each optional but the schema. RCP_TEST_REPORT=FILE as for npm test.
 */
const report = process.env.RCP_TEST_REPORT;

export default defineConfig({
  test: {
    include: ['test/conformance/**/*.test.ts'],
    reporters: report === undefined ? ['default'] : ['default', ['json', { outputFile: report }]],
    globalSetup: ['test/conformance/setup.ts', 'test/setup/default-model.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    maxWorkers: 2,
  },
});
