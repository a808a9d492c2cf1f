import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { METHOD_DOCS_FILE, renderMethodDocs } from '../../scripts/method-docs.js';
import { METHODS } from '../../src/protocol/method-table.js';
import { PARAMS } from '../../src/protocol/schemas/params.js';

describe('docs/methods.md, generated from the method table and the params and result schemas', () => {
  it('is what the declarations render now (else: run npm run docs:methods)', async () => {
    const written = readFileSync(METHOD_DOCS_FILE, 'utf8');
    expect(written, 'docs/methods.md is out of date: run npm run docs:methods').toBe(await renderMethodDocs());
  });

  it('has a section per RCP/1 method (§7) and a row for every top-level param of every method served', async () => {
    const rendered = await renderMethodDocs();
    for (const [method, { section }] of Object.entries(METHODS)) {
      expect(rendered).toContain(`## \`${method}\` (${section})`);
    }
    for (const [method, schema] of Object.entries(PARAMS)) {
      const part = rendered.slice(rendered.indexOf(`## \`${method}\` (`));
      const params = part.slice(0, part.indexOf('### Result'));
      for (const name of Object.keys(schema.properties)) {
        expect(params, `${method} ${name}`).toMatch(new RegExp(`\\| \`${name}\` +\\|`));
      }
    }
  });
});
