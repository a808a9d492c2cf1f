import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { ConfigOverrides } from './config/index.js';
import { StartupError } from './startup-error.js';

export type Transport = { kind: 'stdio' } | { kind: 'http' };

export interface ServeCommand {
  command: 'serve';
  transport: Transport;
  configFile: string | undefined;
  overrides: ConfigOverrides;
  /** `--corpus NAME`: the named corpus of `corpora.root` served as this process's one corpus (docs/tenants.md). */
  corpus: string | undefined;
}

/** `corpus create|list|drop [NAME]` over the named corpora of a root (docs/tenants.md). */
export interface CorpusCommand {
  command: 'corpus';
  action: 'create' | 'list' | 'drop';
  name: string | undefined;
  configFile: string | undefined;
  /** `--data ROOT`: the root of the named corpora (else `corpora.root`). */
  root: string | undefined;
  /** `--store URL`: the named corpora of a PostgreSQL store of record instead (else `store.url`). */
  store: string | undefined;
}

export type ModelsCommand =
  | { command: 'models'; action: 'build'; name: string | undefined; dir: string | undefined }
  | { command: 'models'; action: 'fetch'; names: string[]; dir: string | undefined; hub: string; unpinned: boolean };

export interface IngestCommand {
  command: 'ingest';
  paths: string[];
  configFile: string | undefined;
  overrides: ConfigOverrides;
  chunk: boolean;
  contextual: boolean;
  /** An export made with another encoder: its texts embedded again (its chunks and vectors left). */
  reEmbed: boolean;
  /** `--partition K/N`: only the documents partition K (from 1) of N owns (docs/replicas.md, "Partitions"). */
  partition: { index: number; count: number } | undefined;
  /** `--watch [--interval MS]`: after ingesting, keep the folders in step, looking every so many ms. */
  watchMs: number | undefined;
}

export interface EvalCommand {
  command: 'eval';
  configFile: string | undefined;
  overrides: ConfigOverrides;
  queries: string;
  qrels: string;
  report: string | undefined;
  /** retrieve params from flags (`--mode`, `--fusion`, ...) merged over `--params JSON`. */
  params: Record<string, unknown>;
}

export interface GatewayCommand {
  command: 'gateway';
  registry: string;
  /** `primary`: the Selector — every call to the highest-priority live engine, with failover. */
  select: 'primary' | undefined;
  transport: Transport;
  configFile: string | undefined;
  overrides: ConfigOverrides;
}

export interface McpCommand {
  command: 'mcp';
  /** Federate a registry's engines instead of serving a local corpus. */
  registry: string | undefined;
  /** `--corpus NAME`: a named corpus of `corpora.root` instead of the default one. */
  corpus: string | undefined;
  configFile: string | undefined;
  overrides: ConfigOverrides;
}

export interface ConfigCommand {
  command: 'config';
  configFile: string | undefined;
}

/** `backup --to FILE`, `export --to FILE`, or `restore FILE`: the data dir named by --data / the configuration. */
export interface BackupCommand {
  command: 'backup' | 'restore' | 'export';
  /** The archive written (backup) or read (restore). */
  file: string;
  configFile: string | undefined;
  overrides: ConfigOverrides;
}

export interface HelpCommand {
  command: 'help';
  text: string;
}

export class UsageError extends StartupError {
  override name = 'UsageError';
}

export const USAGE = `usage:
  rcp-server serve [--stdio | --http [HOST:]PORT] [--data DIR] [--store URL] [--config FILE]
                   [--corpora ROOT] [--corpus NAME]
  rcp-server corpus create|drop NAME [--data ROOT | --store URL] [--config FILE]
  rcp-server corpus list [--data ROOT | --store URL] [--config FILE]
  rcp-server gateway --registry FILE [--stdio | --http [HOST:]PORT] [--id NAME] [--select primary]
                     [--config FILE]
  rcp-server mcp [--data DIR | --registry FILE] [--corpora ROOT --corpus NAME] [--config FILE]
  rcp-server ingest [--data DIR] [--store URL] [--config FILE] [--chunk] [--contextual] [--re-embed]
                    [--partition K/N] [--watch [--interval MS]] PATH...
  rcp-server eval --queries FILE --qrels FILE [--data DIR] [--config FILE] [--report FILE]
                  [--mode M] [--fusion F] [--alpha A] [--rrf-k N] [--candidate-k N] [--rerank METHOD]
                  [--unit U] [--params JSON]
  rcp-server config --print [--config FILE]
  rcp-server backup --to FILE [--data DIR] [--config FILE]
  rcp-server restore FILE [--data DIR] [--config FILE]
  rcp-server export --to FILE [--data DIR] [--config FILE]
  rcp-server models build [use-lite|use-lite-int8] [--dir DIR]
  rcp-server models fetch NAME... [--dir DIR] [--hub URL] [--unpinned]

  serve              run the server; --corpora ROOT also serves the named corpora in ROOT's folders at
                     <base>/corpora/NAME over HTTP; --corpus NAME serves that one named corpus alone over --stdio
  corpus             create, list or drop the named corpora of ROOT (default corpora.root), or of a
                     PostgreSQL store (--store URL, default store.url), also while servers run on them;
                     drop is refused while a process has the corpus open (ROOT) or writes to it (a store)
  gateway            federate the engines of a registry (rcp.json, spec §16.1) behind one RCP server:
                     fan-out retrieve with fusion, catalog/list, routed embed/rerank, sharded writes;
                     --select primary instead sends every call to the highest-priority live engine,
                     failing over on -32010 or a dead engine (ping probes liveness)
  mcp                an MCP server on stdin/stdout (for agents that speak MCP): tools "retrieve" and, when
                     writes are allowed, "index_add", over the local corpus or a registry's engines
  ingest             add documents to the corpus in DIR: BEIR-style JSON Lines ({"_id", "title", "text",
                     "metadata"}), and folders and files of PDF, Word (.docx), HTML, Markdown and text,
                     read by content with their headings and pages; resumable (unchanged documents are
                     skipped); --watch then keeps the folders in step (new, changed and removed files,
                     looked at every --interval ms, default 2000) until Ctrl-C;
                     --chunk splits long documents, --contextual adds title/heading context;
                     a file from export is stored with its chunks and vectors (--re-embed: embedded
                     again, for an export made with another encoder); --partition K/N takes only the
                     documents partition K of N owns, as a gateway places them
  eval               run judged queries through retrieve; print nDCG@10, Recall@100, MRR@10
  config --print     print the effective configuration (file < environment), secrets hidden
  backup             write the corpus in DIR to FILE (a tar archive: the store and its saved indexes at one
                     indexVersion) while servers read and write it; a replica's dir likewise
  restore            unpack a backup into DIR, which must hold no corpus; a server there then serves it at
                     the backup's indexVersion (a replica's: then follows its store from there)
  export             write every document in DIR, with its metadata, chunks and vectors, to FILE as JSON
                     Lines that ingest reads into another data dir or a PostgreSQL store
  models build       build the default encoder (USE-lite, converted to ONNX) into DIR
                     (default: models/use-lite); a no-op when it is up to date; use-lite-int8 builds
                     its int8-quantised variant (default DIR models/use-lite-int8), served with
                     models.encoder use-lite-int8
  models fetch       download standard models (models/catalog.json) at their pinned revision into
                     DIR/NAME (default: models/NAME), refusing any file whose sha256 differs;
                     --hub (or HF_ENDPOINT) sets the hub, default https://huggingface.co

  --stdio            speak RCP over stdin/stdout (NDJSON, spec §5.1)
  --http [HOST:]PORT speak RCP over HTTP (spec §5.2); the default, on 127.0.0.1:8080
  --data DIR         data directory (default ./indexes/default)
  --store URL        a postgres:// store of record shared by replicas (--data then holds this replica's
                     snapshot of it); default: the corpus lives in --data alone
  --config FILE      JSON or YAML configuration file; RCP_* environment variables override it
  --registry FILE    the gateway's engines: {"engines": [{"id", "transport", "command" | "url", ...}]}
  --id NAME          the gateway's identity on federation paths (default rcp-gateway)
`;

/** Parses the command line. The `serve` contract is stable: other tools call it. */
export function parseCommandLine(
  argv: readonly string[],
):
  | ServeCommand
  | GatewayCommand
  | McpCommand
  | IngestCommand
  | EvalCommand
  | ConfigCommand
  | BackupCommand
  | ModelsCommand
  | CorpusCommand
  | HelpCommand {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    return { command: 'help', text: USAGE };
  }
  if (command === 'models') return parseModels(rest);
  if (command === 'ingest') return parseIngest(rest);
  if (command === 'eval') return parseEval(rest);
  if (command === 'config') return parseConfigCommand(rest);
  if (command === 'gateway') return parseGateway(rest);
  if (command === 'mcp') return parseMcp(rest);
  if (command === 'corpus') return parseCorpus(rest);
  if (command === 'backup' || command === 'restore' || command === 'export') return parseBackup(command, rest);
  if (command !== 'serve') throw new UsageError(`unknown command '${command}'\n\n${USAGE}`);
  const { values, help, transport, overrides } = parseListening(rest, {
    data: { type: 'string' },
    store: { type: 'string' },
    corpora: { type: 'string' },
    corpus: { type: 'string' },
  });
  if (help) return { command: 'help', text: USAGE };
  if (typeof values.data === 'string') overrides.dataDir = values.data;
  if (typeof values.store === 'string') overrides['store.url'] = values.store;
  if (typeof values.corpora === 'string') overrides['corpora.root'] = values.corpora;
  const corpus = typeof values.corpus === 'string' ? values.corpus : undefined;
  if (corpus !== undefined && transport.kind === 'http') {
    throw new UsageError(
      `--corpus serves one named corpus over stdio; over HTTP, --corpora ROOT serves each at <base>/corpora/NAME\n\n${USAGE}`,
    );
  }
  return { command: 'serve', transport, configFile: values.config as string | undefined, overrides, corpus };
}

function parseCorpus(args: readonly string[]): CorpusCommand {
  const { values, positionals } = parseOrUsage({
    args: [...args],
    options: { data: { type: 'string' }, store: { type: 'string' }, config: { type: 'string' } },
    strict: true,
    allowPositionals: true,
  });
  const [action, name, ...extra] = positionals;
  const named = action === 'create' || action === 'drop';
  if ((named && (name === undefined || extra.length > 0)) || (action === 'list' && name !== undefined)) {
    throw new UsageError(`corpus expects create NAME, drop NAME or list\n\n${USAGE}`);
  }
  if (!named && action !== 'list') throw new UsageError(`corpus expects create NAME, drop NAME or list\n\n${USAGE}`);
  return { command: 'corpus', action, name, configFile: values.config, root: values.data, store: values.store };
}

function parseGateway(args: readonly string[]): GatewayCommand | HelpCommand {
  const { values, help, transport, overrides } = parseListening(args, {
    registry: { type: 'string' },
    id: { type: 'string' },
    select: { type: 'string' },
  });
  if (help) return { command: 'help', text: USAGE };
  if (typeof values.registry !== 'string') throw new UsageError(`gateway needs --registry FILE\n\n${USAGE}`);
  if (typeof values.id === 'string') overrides['federation.id'] = values.id;
  if (values.select !== undefined && values.select !== 'primary') {
    throw new UsageError(`--select expects 'primary'\n\n${USAGE}`);
  }
  return {
    command: 'gateway',
    registry: values.registry,
    select: values.select === 'primary' ? 'primary' : undefined,
    transport,
    configFile: values.config as string | undefined,
    overrides,
  };
}

function parseMcp(args: readonly string[]): McpCommand {
  const { values } = parseOrUsage({
    args: [...args],
    options: {
      data: { type: 'string' },
      registry: { type: 'string' },
      config: { type: 'string' },
      corpora: { type: 'string' },
      corpus: { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  });
  if ((values.data !== undefined || values.corpus !== undefined) && values.registry !== undefined) {
    throw new UsageError(`--data and --corpus exclude --registry\n\n${USAGE}`);
  }
  const overrides: ConfigOverrides = {};
  if (values.data !== undefined) overrides.dataDir = values.data;
  if (values.corpora !== undefined) overrides['corpora.root'] = values.corpora;
  return { command: 'mcp', registry: values.registry, configFile: values.config, overrides, corpus: values.corpus };
}

/** What `serve` and `gateway` share: --stdio | --http [HOST:]PORT, --config, --help. */
function parseListening(args: readonly string[], extra: NonNullable<ParseArgsConfig['options']>) {
  const parsed = parseOrUsage({
    args: [...args],
    options: {
      stdio: { type: 'boolean' },
      http: { type: 'string' },
      config: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      ...extra,
    },
    strict: true,
    allowPositionals: false,
  });
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.stdio === true && values.http !== undefined)
    throw new UsageError(`--stdio and --http exclude each other\n\n${USAGE}`);
  const overrides: ConfigOverrides = {};
  if (typeof values.http === 'string') Object.assign(overrides, parseListen(values.http));
  const transport: Transport = values.stdio === true ? { kind: 'stdio' } : { kind: 'http' };
  return { values, help: values.help === true, transport, overrides };
}

/** `[HOST:]PORT`, with `[::1]:PORT` for IPv6. */
export function parseListen(value: string): ConfigOverrides {
  const match = /^(?:(\[[^\]]+\]|[^:]+):)?(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (match === null || !Number.isInteger(port) || port > 65535) {
    throw new UsageError(`--http expects [HOST:]PORT, got '${value}'`);
  }
  const host = match[1]?.replace(/^\[|\]$/g, '');
  return host === undefined ? { 'http.port': port } : { 'http.host': host, 'http.port': port };
}

function parseModels(args: readonly string[]): ModelsCommand {
  const parsed = parseOrUsage({
    args: [...args],
    options: { dir: { type: 'string' }, hub: { type: 'string' }, unpinned: { type: 'boolean' } },
    strict: true,
    allowPositionals: true,
  });
  const [action = 'build', ...names] = parsed.positionals;
  const { dir, hub, unpinned } = parsed.values;
  if (action === 'build' && names.length <= 1) return { command: 'models', action, name: names[0], dir };
  if (action === 'fetch' && names.length > 0) {
    return {
      command: 'models',
      action,
      names,
      dir,
      hub: hub ?? process.env.HF_ENDPOINT ?? 'https://huggingface.co',
      unpinned: unpinned === true,
    };
  }
  throw new UsageError(`models expects 'build [NAME]' or 'fetch NAME...'\n\n${USAGE}`);
}

function parseIngest(args: readonly string[]): IngestCommand {
  const parsed = parseOrUsage({
    args: [...args],
    options: {
      data: { type: 'string' },
      store: { type: 'string' },
      config: { type: 'string' },
      chunk: { type: 'boolean' },
      contextual: { type: 'boolean' },
      're-embed': { type: 'boolean' },
      partition: { type: 'string' },
      watch: { type: 'boolean' },
      interval: { type: 'string' },
    },
    strict: true,
    allowPositionals: true,
  });
  if (parsed.positionals.length === 0) throw new UsageError(`ingest needs at least one PATH\n\n${USAGE}`);
  const { data, store, config, chunk, contextual, 're-embed': reEmbed, partition, watch, interval } = parsed.values;
  if (interval !== undefined && watch !== true) throw new UsageError('--interval goes with --watch');
  return {
    command: 'ingest',
    paths: parsed.positionals,
    configFile: config,
    overrides: {
      ...(data === undefined ? {} : { dataDir: data }),
      ...(store === undefined ? {} : { 'store.url': store }),
    },
    chunk: chunk === true,
    contextual: contextual === true,
    reEmbed: reEmbed === true,
    partition: partition === undefined ? undefined : parsePartition(partition),
    watchMs: watch === true ? parseInterval(interval ?? '2000') : undefined,
  };
}

/** `--interval MS`: how often a watch looks again, 100 ms to an hour. */
function parseInterval(value: string): number {
  const ms = Number(value);
  if (!/^\d+$/.test(value) || ms < 100 || ms > 3_600_000) {
    throw new UsageError(`--interval expects milliseconds from 100 to 3600000, got '${value}'`);
  }
  return ms;
}

/** `K/N`: partition K of N, 1 <= K <= N <= 1024; as the ingest takes it, K counted from 0. */
function parsePartition(value: string): { index: number; count: number } {
  const [k, n] = (/^(\d{1,4})\/(\d{1,4})$/.exec(value) ?? []).slice(1).map(Number);
  if (k === undefined || n === undefined || k < 1 || k > n || n > 1024) {
    throw new UsageError(`--partition expects K/N with 1 <= K <= N <= 1024, got '${value}'`);
  }
  return { index: k - 1, count: n };
}

function parseEval(args: readonly string[]): EvalCommand {
  const { values } = parseOrUsage({
    args: [...args],
    options: {
      data: { type: 'string' },
      config: { type: 'string' },
      queries: { type: 'string' },
      qrels: { type: 'string' },
      report: { type: 'string' },
      mode: { type: 'string' },
      fusion: { type: 'string' },
      alpha: { type: 'string' },
      'rrf-k': { type: 'string' },
      'candidate-k': { type: 'string' },
      rerank: { type: 'string' },
      unit: { type: 'string' },
      params: { type: 'string' },
    },
    strict: true,
  });
  if (values.queries === undefined || values.qrels === undefined)
    throw new UsageError(`eval needs --queries and --qrels\n\n${USAGE}`);
  let params: Record<string, unknown> = {};
  try {
    params = values.params === undefined ? {} : (JSON.parse(values.params) as Record<string, unknown>);
  } catch {
    throw new UsageError('--params must be a JSON object of retrieve params');
  }
  const number = (flag: string, raw: string | undefined) => {
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!Number.isFinite(value)) throw new UsageError(`--${flag} expects a number`);
    return value;
  };
  const fusion: Record<string, unknown> = { ...(params.fusion as Record<string, unknown> | undefined) };
  if (values.fusion !== undefined) fusion.method = values.fusion;
  if (values.alpha !== undefined) fusion.alpha = number('alpha', values.alpha);
  if (values['rrf-k'] !== undefined) fusion.rrfK = number('rrf-k', values['rrf-k']);
  if (Object.keys(fusion).length > 0) params.fusion = fusion;
  if (values.mode !== undefined) params.mode = values.mode;
  if (values.unit !== undefined) params.unit = values.unit;
  if (values['candidate-k'] !== undefined) params.candidateK = number('candidate-k', values['candidate-k']);
  if (values.rerank !== undefined) params.rerank = values.rerank === 'false' ? false : { method: values.rerank };
  return {
    command: 'eval',
    configFile: values.config,
    overrides: values.data === undefined ? {} : { dataDir: values.data },
    queries: values.queries,
    qrels: values.qrels,
    report: values.report,
    params,
  };
}

function parseConfigCommand(args: readonly string[]): ConfigCommand {
  const { values } = parseOrUsage({
    args: [...args],
    options: { print: { type: 'boolean' }, config: { type: 'string' } },
    strict: true,
  });
  if (values.print !== true) throw new UsageError(`config needs --print\n\n${USAGE}`);
  return { command: 'config', configFile: values.config };
}

function parseBackup(command: BackupCommand['command'], args: readonly string[]): BackupCommand {
  const { values, positionals } = parseOrUsage({
    args: [...args],
    options: { to: { type: 'string' }, data: { type: 'string' }, config: { type: 'string' } },
    strict: true,
    allowPositionals: command === 'restore',
  });
  const restore = command === 'restore';
  const file = restore ? (positionals.length === 1 ? positionals[0] : undefined) : values.to;
  if (restore && values.to !== undefined) throw new UsageError(`restore takes FILE, not --to\n\n${USAGE}`);
  if (file === undefined) {
    throw new UsageError(`${restore ? 'restore needs one FILE' : `${command} needs --to FILE`}\n\n${USAGE}`);
  }
  return {
    command,
    file,
    configFile: values.config,
    overrides: values.data === undefined ? {} : { dataDir: values.data },
  };
}

/** node:util parseArgs, its complaints turned into usage errors (printed with the usage text, exit 2). */
function parseOrUsage<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n\n${USAGE}`);
  }
}
