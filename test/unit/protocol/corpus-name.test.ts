import { describe, expect, it } from 'vitest';
import { CORPUS_GRANT, granted, isCorpusName } from '../../../src/protocol/corpus-name.js';

/** docs/tenants.md: what a corpus may be called, and which corpora a key's `corpora` lets it use (§15.6). */
describe('corpus names and grants', () => {
  it('a name is 1 to 64 of a-z 0-9 - _, starting with a letter or digit: safe in a URL and as a folder', () => {
    for (const name of ['a', 'acme', 'beta-2', 'x_y', '0', 'a'.repeat(64)]) expect(isCorpusName(name), name).toBe(true);
    for (const name of ['', 'Acme', '-a', '_a', '.', '..', 'a/b', 'a.b', 'a b', 'é', 'a'.repeat(65)]) {
      expect(isCorpusName(name), name).toBe(false);
    }
  });

  it('a grant is a name, a prefix ending in *, or * alone', () => {
    const grant = new RegExp(CORPUS_GRANT);
    for (const ok of ['acme', 'beta-*', '*', 'default']) expect(grant.test(ok), ok).toBe(true);
    for (const bad of ['', '**', 'a*b', '*a', 'A*', '../*']) expect(grant.test(bad), bad).toBe(false);
  });

  it('prefixes match named corpora; the default corpus only by its name or by *', () => {
    expect(granted(['acme'], 'acme')).toBe(true);
    expect(granted(['acme'], 'acme-2')).toBe(false);
    expect(granted(['beta-*'], 'beta-2')).toBe(true);
    expect(granted(['beta-*'], 'beta')).toBe(false);
    expect(granted(['d*'], 'docs')).toBe(true);
    expect(granted(['d*'], 'default')).toBe(false);
    expect(granted(['default'], 'default')).toBe(true);
    expect(granted(['*'], 'default')).toBe(true);
    expect(granted(['*'], 'anything')).toBe(true);
  });
});
