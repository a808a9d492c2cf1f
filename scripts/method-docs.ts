import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { METHODS, type CoreMethod } from '../src/protocol/method-table.js';
import { Capabilities, PeerInfo } from '../src/protocol/schemas/capabilities.js';
import { PARAMS, ContentBlock } from '../src/protocol/schemas/params.js';
import { RESULTS } from '../src/protocol/schemas/results.js';
import { cell, typeOf, type SchemaNode } from './schema-text.js';

/**
 * `npm run docs:methods`: writes docs/methods.md from the method table (src/protocol/method-table.ts) and the TypeBox
 * schemas of each method's params (src/protocol/schemas/params.ts) and result (results.ts): the one declaration the
 * server validates with and the typed client's types derive from. test/unit/method-docs.test.ts renders it again and
 * fails when the file differs.
 */
export const METHOD_DOCS_FILE = fileURLToPath(new URL('../docs/methods.md', import.meta.url));

/** Schemas that recur, named rather than spelled out each time (matched by content: TypeBox may copy them). */
const NAMED: readonly [unknown, string][] = [
  [ContentBlock, 'Content block (§4.8)'],
  [Capabilities, 'capabilities (§6; see [Protocol](protocol.md))'],
  [PeerInfo, 'peer info (§7.1)'],
];

/** Nested objects are spelled out as rows this deep; deeper ones are named by their type. */
const MAX_DEPTH = 3;

const HEADER = `# Methods: params and results

<!-- Generated from src/protocol/method-table.ts and src/protocol/schemas/ by \`npm run docs:methods\`: edit those, not this file. -->

What each RCP/1 method takes and answers on this server, from the declarations the server validates params with and
the typed client's types derive from. A param not listed is ignored (§4.6); a param of the wrong type is -32602 with
\`data.field\`. Every result may also carry \`_meta\` (§4.4). What the server does with each is in the pages linked from
[Protocol](protocol.md); the bounds it applies beyond these types (\`limits.*\`) are in [Configuration](configuration.md).
`;

/** docs/methods.md as `npm run docs:methods` writes it (formatted as prettier would). */
export async function renderMethodDocs(): Promise<string> {
  const methods = Object.keys(METHODS) as CoreMethod[];
  const text = [HEADER, ...summary(methods), ...methods.flatMap(section)].join('\n');
  const options = await resolveConfig(METHOD_DOCS_FILE);
  return format(text, { ...options, parser: 'markdown' });
}

function summary(methods: readonly CoreMethod[]): string[] {
  const lines = ['| Method | Spec | Capability | Access | Rate-limit bucket |', '| --- | --- | --- | --- | --- |'];
  for (const method of methods) {
    const { section, capability, access, rateClass } = METHODS[method];
    const cells = [`[\`${method}\`](#${anchor(method)})`, section, code(capability), access, code(rateClass)];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return [...lines, ''];
}

function section(method: CoreMethod): string[] {
  const params = (PARAMS as Partial<Record<CoreMethod, SchemaNode>>)[method];
  const lines = [`## \`${method}\` (${METHODS[method].section})`, ''];
  lines.push('### Params', '');
  lines.push(...(params === undefined ? [paramsUnlisted(method), ''] : table('Param', params)));
  lines.push('### Result', '', ...table('Member', RESULTS[method] as SchemaNode));
  return lines;
}

const paramsUnlisted = (method: CoreMethod) =>
  METHODS[method].capability === null
    ? 'As the lifecycle (§13) defines them; see [Protocol](protocol.md).'
    : 'Not served by this server: the capability is never advertised (-32003). The result RCP/1 defines:';

function table(heading: string, node: SchemaNode): string[] {
  const rows = members(node, '', 1);
  if (rows.length === 0) return ['An object with no members of its own.', ''];
  return [`| ${heading} | Type | Required |`, '| --- | --- | --- |', ...rows, ''];
}

/** A row per member, and rows for the members of each nested object (`a.b`, `list[].b`) up to MAX_DEPTH. */
function members(node: SchemaNode, prefix: string, depth: number): string[] {
  return Object.entries(node.properties ?? {}).flatMap(([key, child]) => {
    const path = `${prefix}${key}`;
    const required = node.required?.includes(key) === true ? 'yes' : 'no';
    const row = `| \`${path}\` | ${cell(typeOf(child, brief))} | ${required} |`;
    const inner = depth < MAX_DEPTH ? nested(child) : undefined;
    return inner === undefined ? [row] : [row, ...members(inner.node, `${path}${inner.suffix}.`, depth + 1)];
  });
}

/** The object whose members are spelled out below a member: itself, its list's items, or its one object variant. */
function nested(node: SchemaNode): { node: SchemaNode; suffix: string } | undefined {
  if (spelledOut(node)) return { node, suffix: '' };
  if (node.type === 'array' && node.items !== undefined && spelledOut(node.items))
    return { node: node.items, suffix: '[]' };
  const variants = (node.anyOf ?? []).filter(spelledOut);
  return variants.length === 1 ? { node: variants[0]!, suffix: '' } : undefined;
}

const spelledOut = (node: SchemaNode) =>
  node.type === 'object' && Object.keys(node.properties ?? {}).length > 0 && nameOf(node) === undefined;

/** A type in a row: recurring schemas by name, objects spelled out below as `object`. */
const brief = (node: SchemaNode) => nameOf(node) ?? (spelledOut(node) ? 'object' : undefined);

function nameOf(node: SchemaNode): string | undefined {
  const text = JSON.stringify(node);
  return NAMED.find(([schema]) => JSON.stringify(schema) === text)?.[1];
}

const code = (value: string | null) => (value === null ? 'none' : `\`${value}\``);

/** GitHub's heading anchor for "`method` (§7.n)". */
const anchor = (method: CoreMethod) =>
  `${method} ${METHODS[method].section}`
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .replace(/ /g, '-');

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeFileSync(METHOD_DOCS_FILE, await renderMethodDocs());
  console.log(`wrote ${METHOD_DOCS_FILE}`);
}
