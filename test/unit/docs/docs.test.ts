import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { USAGE } from '../../../src/cli.js';
import { RpcErrorCode } from '../../../src/protocol/codes.js';
import { METHODS } from '../../../src/protocol/method-table.js';

/**
 * The hand-written docs, pinned to the code where they state facts (docs/configuration.md is generated and pinned by
 * test/unit/config-docs.test.ts): every RCP method and every error code in docs/protocol.md's tables, every CLI
 * command and flag of USAGE somewhere in the docs or the README, and every relative link to a file (and heading)
 * that exists.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const DOCS = readdirSync(join(ROOT, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => join(ROOT, 'docs', name));
const FILES = [join(ROOT, 'README.md'), ...DOCS];
const read = (file: string) => readFileSync(file, 'utf8');
const PROTOCOL = read(join(ROOT, 'docs', 'protocol.md'));

/** The rows of the markdown table under `## heading` in docs/protocol.md, as cells (backticks kept). */
function table(heading: string): string[][] {
  const section = PROTOCOL.split(/^## /m).find((part) => part.startsWith(`${heading}\n`)) ?? '';
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const text = read(file).replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => slug(match[1]!)));
}

describe('the docs, pinned to the code', () => {
  it('docs/protocol.md lists every RCP method (src/protocol/method-table.ts) with the capability that gates it', () => {
    const rows = new Map(table('Methods').map(([method, capability]) => [method, capability]));
    for (const [method, { capability }] of Object.entries(METHODS)) {
      expect(rows.has(`\`${method}\``), `${method} is missing from docs/protocol.md#methods`).toBe(true);
      if (capability !== null) expect(rows.get(`\`${method}\``), method).toBe(`\`${capability}\``);
    }
    expect(rows.size, 'a method in docs/protocol.md#methods that METHODS does not have').toBe(
      Object.keys(METHODS).length,
    );
  });

  it('docs/protocol.md lists every error code (src/protocol/codes.ts) under its §12 symbol', () => {
    const rows = new Map(table('Error codes').map(([code, symbol]) => [code, symbol]));
    for (const [symbol, code] of Object.entries(RpcErrorCode)) {
      expect(rows.get(`\`${code}\``), `${code} ${symbol} in docs/protocol.md#error-codes`).toBe(`\`${symbol}\``);
    }
    expect(rows.size, 'a code in docs/protocol.md#error-codes that RpcErrorCode does not have').toBe(
      Object.keys(RpcErrorCode).length,
    );
  });

  it('names every command and flag of the CLI usage (src/cli.ts) in the docs or the README', () => {
    const text = FILES.map(read).join('\n');
    const commands = new Set([...USAGE.matchAll(/^ {2}rcp-server ([a-z]+(?: [a-z]+)?)/gm)].map((match) => match[1]!));
    expect(commands.size).toBeGreaterThan(5);
    for (const command of commands) expect(text, `rcp-server ${command}`).toContain(`rcp-server ${command}`);
    const flags = new Set(USAGE.match(/--[a-z][a-z0-9-]*/g));
    expect(flags.size).toBeGreaterThan(10);
    for (const flag of flags) expect(text, flag).toMatch(new RegExp(`${flag}(?![a-z0-9-])`));
  });

  it('links only to files, and headings, that exist', () => {
    const broken: string[] = [];
    for (const file of FILES) {
      const text = read(file).replace(/^```[\s\S]*?^```/gm, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue; // http:, https:, mailto:
        const [path = '', anchor] = target!.split('#');
        const linked = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
        const from = relative(ROOT, file);
        if (!existsSync(linked)) broken.push(`${from}: ${target} (no such file)`);
        else if (anchor !== undefined && linked.endsWith('.md') && !anchors(linked).has(anchor)) {
          broken.push(`${from}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
