// Records every module URL the process resolves to the file named by RCP_TEST_IMPORTS, one per line (node --import):
// how test/wire/tracing.test.ts sees which modules a server loaded. Resolution runs on the loader's thread, so the
// hooks module appends there.
import { register } from 'node:module';

register('./record-imports-hooks.mjs', import.meta.url, { data: { file: process.env.RCP_TEST_IMPORTS } });
