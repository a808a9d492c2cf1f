// @ts-check
import { builtinModules } from 'node:module';
import { dirname, relative, resolve } from 'node:path';

/**
 * docs/architecture.md §3, the dependency direction as one table, checked on every import of every file under src/
 * at any depth (the lint rule `layers/imports`, and test/unit/lint-zones.test.ts over the whole tree).
 *
 * A room is a top-level folder or file of src/ (`corpus/store/writes.ts` is in `corpus`, `app.ts` is `app`; cli.ts
 * and cli/ are both `cli`). `may` lists the rooms a room may import (`*`: all); a room with an `entry` is reached
 * from other rooms through that module only; FILE_ALLOWANCES lets one file import one module beyond its room's `may`.
 * A folder or file not named here is refused until it is.
 */
export const ROOMS = {
  protocol: { may: [] },
  platform: { may: ['protocol'] },
  transport: { may: ['protocol'] },
  models: { may: ['protocol', 'platform', 'startup-error'], entry: 'models/index.ts' },
  lexical: { may: ['protocol'] },
  corpus: { may: ['protocol', 'platform', 'models', 'lexical', 'startup-error'], entry: 'corpus/index.ts' },
  content: { may: ['protocol'], entry: 'content/index.ts' },
  // Files of the formats people keep, read into text in bounded parser processes (docs/documents.md).
  documents: { may: ['protocol'], entry: 'documents/index.ts' },
  retrieval: { may: ['protocol', 'models', 'corpus'] },
  methods: { may: ['protocol', 'retrieval', 'models', 'corpus', 'content', 'documents'] },
  client: { may: ['protocol'] },
  // The gateway (§16) is a composition of its own: an RCP server to its clients (protocol, the app it builds) and an
  // RCP client to its engines through the typed client.
  gateway: { may: ['protocol', 'retrieval', 'client', 'app', 'config', 'startup-error'] },
  ingest: { may: ['protocol', 'models', 'corpus', 'content', 'documents', 'config', 'startup-error'] },
  eval: { may: ['protocol', 'retrieval', 'app', 'startup-error'] },
  metrics: { may: ['protocol', 'models', 'corpus'] },
  // Named corpora (docs/tenants.md): their folders, opening and closing them as engines, and the catalog of them.
  tenants: { may: ['protocol', 'transport', 'corpus', 'startup-error'], entry: 'tenants/index.ts' },
  // The OpenTelemetry SDK and its exporter, started when tracing is on (docs/operations.md "Tracing").
  telemetry: { may: ['protocol', 'startup-error'], entry: 'telemetry/index.ts' },
  'startup-error': { may: [] },
  // The composition (app.ts, config/) and the process (main.ts, cli.ts, cli/) wire every room together.
  app: { may: ['*'] },
  config: { may: ['*'], entry: 'config/index.ts' },
  main: { may: ['*'] },
  cli: { may: ['*'] },
};

/**
 * Single files a room's `may` does not cover, each with the one module it may import (src/-relative, `from` then
 * `target`): the room stays closed to the rest of that room.
 */
export const FILE_ALLOWANCES = [
  // The MCP bridge and the eval call their in-process session as a client does: through the client's one requester.
  { from: 'transport/mcp.ts', target: 'client/requester.ts' },
  { from: 'eval.ts', target: 'client/requester.ts' },
];

/** Packages one place owns (globs over src/-relative paths; `*` is one name, `**` any depth). */
export const PACKAGES = [
  {
    names: ['fastify', '@fastify/'],
    owners: ['transport/**', 'app.ts', 'cli/serving.ts'],
    why: 'only the HTTP transport, app.ts and the serving loop (it listens) use Fastify',
  },
  {
    names: ['node:http', 'node:https'],
    owners: ['transport/**', 'app.ts', 'content/**'],
    why: "an HTTP server is the transport's; an HTTP client is the uri fetcher's (it pins the checked address, §15.5)",
  },
  { names: ['onnxruntime-node'], owners: ['models/onnx/**'], why: 'a native library belongs to its adapter' },
  { names: ['hnswlib-node'], owners: ['corpus/hnsw/**'], why: 'a native library belongs to its adapter' },
  { names: ['better-sqlite3'], owners: ['corpus/store/**'], why: 'a database driver belongs to its adapter' },
  {
    names: ['pg'],
    owners: ['corpus/store/postgres/**'],
    why: 'a database driver belongs to its adapter',
  },
  { names: ['tar-stream'], owners: ['corpus/backup/**'], why: 'backups are the only archives' },
  {
    names: ['pdfjs-dist', 'mammoth', 'jszip', 'htmlparser2'],
    owners: ['documents/**'],
    why: 'document readers run on untrusted bytes, only in the parser processes of documents/',
  },
  {
    names: ['@opentelemetry/api', '@opentelemetry/context-async-hooks', '@opentelemetry/core'],
    owners: ['protocol/tracing.ts', 'telemetry/**'],
    why: 'spans are started through protocol/tracing.ts alone, so tracing off costs one check',
  },
  {
    names: ['@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/resources'],
    owners: ['telemetry/**'],
    why: 'the SDK and exporter are loaded by telemetry/ only when tracing is on',
  },
  { names: ['ioredis'], owners: ['transport/redis-bucket-store.ts'], why: 'only the Redis bucket store uses ioredis' },
];

/** The room of a src/-relative path such as `corpus/store/writes.ts` or `app.ts`. */
export function roomOf(path) {
  return path.split('/')[0].replace(/\.[cm]?[jt]s$/, '');
}

/** Whether a src/-relative path matches a glob (`*`: one name, `**`: any depth). */
function matches(glob, path) {
  const pattern = glob
    .split('**')
    .map((part) => part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*'))
    .join('.*');
  return new RegExp(`^${pattern}$`).test(path);
}

function owns(name, target) {
  return name.endsWith('/') ? target.startsWith(name) : target === name || target.startsWith(`${name}/`);
}

/**
 * Why `from` (a src/-relative file) may not import `target`: a src/-relative file, or a package name. Undefined when
 * it may.
 */
export function refusal(from, target, isPackage) {
  if (isPackage) {
    const owned = PACKAGES.find((entry) => entry.names.some((name) => owns(name, target)));
    if (owned === undefined || owned.owners.some((glob) => matches(glob, from))) return undefined;
    return `src/${from} may not import ${target}: ${owned.why} (${owned.owners.join(', ')})`;
  }
  if (FILE_ALLOWANCES.some((allowance) => allowance.from === from && allowance.target === target)) return undefined;
  const source = roomOf(from);
  const room = roomOf(target);
  for (const name of [source, room]) {
    if (!Object.hasOwn(ROOMS, name)) return `src/${name} is not a room of eslint/layers.js: name what it may import`;
  }
  if (room === source) return undefined;
  const { may } = ROOMS[source];
  if (!may.includes('*') && !may.includes(room))
    return `src/${from} (${source}) may not import src/${target} (${room})`;
  const entry = ROOMS[room]?.entry;
  if (entry !== undefined && target !== entry)
    return `src/${from} reaches ${room} through src/${entry} only, not src/${target}`;
  return undefined;
}

/** The src/-relative file an import names, or the package; undefined for a file outside src/. */
export function importTarget(file, specifier, srcDir) {
  if (!specifier.startsWith('.')) {
    const bare = specifier.replace(/^node:/, '');
    const builtin = builtinModules.includes(bare.split('/')[0]);
    return { target: builtin ? `node:${bare.split('/')[0]}` : specifier, isPackage: true };
  }
  const path = relative(srcDir, resolve(dirname(file), specifier)).replace(/\.js$/, '.ts');
  return path.startsWith('..') ? undefined : { target: path, isPackage: false };
}

/** @type {import('eslint').Rule.RuleModule} */
const imports = {
  meta: {
    type: 'problem',
    schema: [{ type: 'string' }],
    messages: { layer: 'docs/architecture.md §3 layering: {{why}}' },
  },
  create(context) {
    const srcDir = resolve(context.cwd, context.options[0] ?? 'src');
    const from = relative(srcDir, context.filename);
    if (from.startsWith('..')) return {};
    const check = (node, source) => {
      if (source?.type !== 'Literal' || typeof source.value !== 'string') return;
      const found = importTarget(context.filename, source.value, srcDir);
      const why = found && refusal(from, found.target, found.isPackage);
      if (why !== undefined) context.report({ node, messageId: 'layer', data: { why } });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source),
      ExportAllDeclaration: (node) => check(node, node.source),
      ExportNamedDeclaration: (node) => check(node, node.source),
      ImportExpression: (node) => check(node, node.source),
    };
  },
};

export const layers = { rules: { imports } };
