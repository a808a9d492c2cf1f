import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { ConfigSchema, DERIVED_ENVIRONMENT, ENVIRONMENT } from '../src/config/index.js';
import { cell, typeOf, type SchemaNode } from './schema-text.js';

/**
 * `npm run docs:config`: writes docs/configuration.md from ConfigSchema (src/config/schema.ts), the one declaration of every
 * setting's type, constraints, default and description, and from the environment variable tables beside it.
 * test/unit/config-docs.test.ts renders it again and fails when the file differs.
 */
export const DOCS_FILE = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));

/** Defaults computed at run time: named for the reader, not printed as this machine's values. */
const COMPUTED_DEFAULTS: Record<string, string> = {
  'server.version': "the package's version",
  'models.dir': 'the `models` directory of the package',
};

const HEADER = `# Configuration

<!-- Generated from ConfigSchema in src/config/schema.ts by \`npm run docs:config\`: edit the schema, not this file. -->

Every setting has a default (below). A config file (\`--config <file>\`, JSON or YAML) overrides the defaults, an
environment variable overrides the file, and a command-line flag overrides both. Unknown keys in a config file are
errors: a typo must not silently keep a default.

Each setting has its own environment variable: \`RCP_\` and its path in upper snake case
(\`retrieve.fusion.rrfK\` is \`RCP_RETRIEVE_FUSION_RRF_K\`), parsed by the setting's type: numbers, \`true\`/\`1\`/\`false\`/\`0\`,
strings, and JSON for lists and maps (a list of strings may also be comma-separated). Some settings also have a
shorter alias; where both are set, the alias wins.
`;

/** docs/configuration.md as `npm run docs:config` writes it (formatted as prettier would). */
export async function renderConfigDocs(): Promise<string> {
  const root = ConfigSchema as SchemaNode;
  const text = [HEADER, ...renderSection(root, [])].join('\n');
  const options = await resolveConfig(DOCS_FILE);
  return format(text, { ...options, parser: 'markdown' });
}

/** A section's heading, description and table of its own settings, then its subsections, depth first. */
function renderSection(node: SchemaNode, path: string[]): string[] {
  const entries = Object.entries(node.properties ?? {});
  const leaves = entries.filter(([, child]) => !isSection(child));
  const sections = entries.filter(([, child]) => isSection(child));
  const heading = path.length === 0 ? 'Top level' : `\`${path.join('.')}\``;
  const lines = [`${'#'.repeat(Math.min(Math.max(path.length, 1), 3) + 1)} ${heading}`, ''];
  if (node.description !== undefined && path.length > 0) lines.push(node.description, '');
  const aliases = aliasesOf(path.join('.'));
  if (aliases.length > 0) lines.push(`${aliases} (alias) sets the whole section.`, '');
  if (leaves.length > 0) {
    lines.push('| Setting | Type | Default | Environment | Description |', '| --- | --- | --- | --- | --- |');
    for (const [key, child] of leaves) lines.push(row([...path, key], child));
    lines.push('');
  }
  return [...lines, ...sections.flatMap(([key, child]) => renderSection(child, [...path, key]))];
}

/** A group of settings (it has its own heading); a map (`index.fields`) or list of objects is one setting. */
const isSection = (node: SchemaNode) => node.type === 'object' && node.properties !== undefined;

function row(path: string[], node: SchemaNode): string {
  const name = path.join('.');
  const own = Object.entries(DERIVED_ENVIRONMENT).find(([, setting]) => setting.path === name)?.[0];
  const aliases = aliasesOf(name);
  const environment = [own === undefined ? '' : `\`${own}\``, aliases === '' ? '' : `alias ${aliases}`]
    .filter(Boolean)
    .join(', ');
  const cells = [`\`${name}\``, typeOf(node), defaultOf(name, node), environment, node.description ?? ''];
  return `| ${cells.map(cell).join(' | ')} |`;
}

const aliasesOf = (path: string) =>
  Object.entries(ENVIRONMENT)
    .filter(([, setting]) => setting.path === path)
    .map(([alias]) => `\`${alias}\``)
    .join(', ');

function defaultOf(path: string, node: SchemaNode): string {
  const computed = COMPUTED_DEFAULTS[path];
  if (computed !== undefined) return computed;
  const value = node.default;
  const shown = `\`${JSON.stringify(value)}\``;
  if (typeof value !== 'number' || value === 0) return shown;
  const key = path.slice(path.lastIndexOf('.') + 1);
  const readable = key.endsWith('Bytes') ? bytes(value) : key.endsWith('Ms') ? duration(value) : undefined;
  return readable === undefined ? shown : `${shown} (${readable})`;
}

function bytes(n: number): string | undefined {
  const units = ['KiB', 'MiB', 'GiB'];
  let unit: string | undefined;
  for (let size = n, i = 0; size % 1024 === 0 && i < units.length; size /= 1024, i += 1) {
    unit = `${size / 1024} ${units[i]}`;
  }
  return unit;
}

function duration(ms: number): string | undefined {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return ms % 1000 === 0 ? `${ms / 1000} s` : undefined;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  mkdirSync(dirname(DOCS_FILE), { recursive: true });
  writeFileSync(DOCS_FILE, await renderConfigDocs());
  console.log(`wrote ${DOCS_FILE}`);
}
