import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DOCS_FILE, renderConfigDocs } from '../../scripts/config-docs.js';
import { DERIVED_ENVIRONMENT, ENVIRONMENT } from '../../src/config/index.js';

describe('docs/configuration.md, generated from ConfigSchema', () => {
  it('is what the schema renders now (else: run npm run docs:config)', async () => {
    const rendered = await renderConfigDocs();
    const written = readFileSync(DOCS_FILE, 'utf8');
    expect(written, 'docs/configuration.md is out of date: run npm run docs:config').toBe(rendered);
    // A default computed at run time is named, never printed as this machine's value (see COMPUTED_DEFAULTS).
    expect(rendered).not.toContain(fileURLToPath(new URL('../..', import.meta.url)));
  });

  it('has a row for every setting, with its variable, its aliases and a description', async () => {
    const rows = new Map(
      (await renderConfigDocs())
        .split('\n')
        .filter((line) => line.startsWith('| `'))
        .map((line) => [/^\| `([^`]+)`/.exec(line)![1]!, line.split(/(?<!\\)\|/).map((cell) => cell.trim())]),
    );
    expect(rows.size).toBe(Object.keys(DERIVED_ENVIRONMENT).length);
    for (const [name, { path }] of Object.entries(DERIVED_ENVIRONMENT)) {
      const cells = rows.get(path);
      expect(cells, path).toBeDefined();
      expect(cells![4], `${path}: environment`).toContain(`\`${name}\``);
      expect(cells![5], `${path}: description`).not.toBe('');
    }
    const aliases = Object.entries(ENVIRONMENT).filter(([, { path }]) => rows.has(path));
    for (const [alias, { path }] of aliases) expect(rows.get(path)![4], alias).toContain(`alias \`${alias}\``);
  });
});
