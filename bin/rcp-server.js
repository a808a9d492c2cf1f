#!/usr/bin/env node
// The `rcp-server` executable. The TypeScript sources are compiled to dist/ by `npm run build`.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('rcp-server: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
const { main } = await import(entry.href);
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`rcp-server: fatal: ${error?.stack ?? error}\n`);
    process.exit(1);
  },
);
