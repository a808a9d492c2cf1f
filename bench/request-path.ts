/**
 * `npm run bench -- request-path`: how an HTTP request's way in reads, counted (docs/architecture.md §4.1). A copy of
 * dist/ in a temporary folder has every function of src/transport/, src/protocol/ and src/platform/codec/ given an
 * entry hook that records its name, its file and the files of its call stack (async frames included). An app on that
 * copy, with API keys and rate limits on, takes one `POST /rcp/<method>` and one `POST /rcp` batch of two, each
 * followed from the server's request listener to `Session.handle`, and prints:
 * - stops: functions entered; files: the files they are in;
 * - returns to a file left: stops in a file seen before, but not the previous stop's;
 * - climbs: stops entered from another file while their own file is further up the stack (a callback up into a file
 *   that called down).
 * RCP_BENCH_TRACE=1 prints each stop.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type } from '@sinclair/typebox';
import ts from 'typescript';
import type { App } from '../src/app.js';
import type { Config, loadConfig as LoadConfig } from '../src/config/index.js';
import type { MethodRegistry } from '../src/protocol/registry.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TRACED = ['transport', 'protocol', 'platform/codec'];
const KEY = 'request-path-bench-key';

interface Stop {
  readonly name: string;
  readonly file: string;
  /** The files of the frames above it, nearest first. */
  readonly callers: readonly string[];
}

export async function benchRequestPath(): Promise<void> {
  const copy = mkdtempSync(join(tmpdir(), 'rcp-request-path-'));
  try {
    instrument(copy);
    const app = await startApp(`${copy}/dist/`);
    const server = await app.buildHttp();
    const origin = new URL(await server.listen({ host: '127.0.0.1', port: 0 }));
    const echo = (id: number) => ({ jsonrpc: '2.0', id, method: 'x-trace/echo', params: { text: 'hi' } });
    const paths: [string, string, unknown][] = [
      ['POST /rcp/<method>', '/rcp/x-trace/echo', echo(1)],
      ['POST /rcp (batch of 2)', '/rcp', [echo(1), echo(2)]],
    ];
    for (const [what, path, body] of paths) {
      await post(origin, path, body); // warm
      const stops = await follow(`${copy}/dist/`, () => post(origin, path, body));
      const { files, returns, climbs } = measure(stops);
      console.log(
        `${what}: ${stops.length} stops in ${files} files, ${returns} returns to a file left, ${climbs} climbs`,
      );
      if (process.env.RCP_BENCH_TRACE === '1') for (const s of stops) console.log(`  ${s.file}:${s.name}`);
    }
    await app.close();
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

/** dist/ copied into `copy`, each function of the traced folders calling `globalThis.__trace(name, file)` first. */
function instrument(copy: string): void {
  // Without the source maps: they would no longer fit, and where they are on (tsx) stacks would name src/ instead.
  cpSync(join(ROOT, 'dist'), join(copy, 'dist'), { recursive: true, filter: (path) => !path.endsWith('.map') });
  cpSync(join(ROOT, 'package.json'), join(copy, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  for (const folder of TRACED) {
    for (const name of readdirSync(join(copy, 'dist', folder)).filter((f) => f.endsWith('.js'))) {
      const path = join(copy, 'dist', folder, name);
      writeFileSync(path, hooked(readFileSync(path, 'utf8'), `${folder}/${name.replace(/\.js$/, '.ts')}`));
    }
  }
}

function hooked(text: string, file: string): string {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const edits: [number, string][] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const body = node.body as ts.Node;
      const hook = `globalThis.__trace?.(${JSON.stringify(nameOf(node, source))}, ${JSON.stringify(file)});`;
      if (ts.isBlock(body)) edits.push([body.getStart() + 1, hook]);
      else edits.push([body.getStart(), `{ ${hook} return (`], [body.end, `); }`]);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  let out = text;
  for (const [at, insert] of edits.sort((a, b) => b[0] - a[0])) out = out.slice(0, at) + insert + out.slice(at);
  return out;
}

/** `Class.method`, a function's or variable's name, else `<enclosing>/λ<line>`. */
function nameOf(node: ts.Node, source: ts.SourceFile): string {
  const named = node as ts.Node & { name?: ts.Node };
  const owner = ts.findAncestor(node.parent, ts.isClassLike)?.name?.getText();
  if (ts.isConstructorDeclaration(node)) return `${owner}.constructor`;
  if (named.name !== undefined)
    return ts.isFunctionDeclaration(node) ? named.name.getText() : `${owner}.${named.name.getText()}`;
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText();
  const enclosing = ts.findAncestor(parent, ts.isFunctionLike);
  const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
  return `${enclosing === undefined ? 'top' : nameOf(enclosing, source)}/λ${line}`;
}

async function startApp(dist: string): Promise<App> {
  const { loadConfig } = (await import(`${dist}config.js`)) as { loadConfig: typeof LoadConfig };
  const { createApp } = (await import(`${dist}app.js`)) as {
    createApp: (config: Config, options: { register: (registry: MethodRegistry) => void }) => App;
  };
  const config = loadConfig({
    overrides: {
      'log.level': 'silent',
      'models.encoder': 'none',
      dataDir: mkdtempSync(join(tmpdir(), 'rcp-data-')),
      'auth.apiKeys': [{ key: KEY, scopes: ['read'] }],
      'limits.rateLimit': { reads: 1000, writes: 0, models: 0 },
    },
  });
  const params = Type.Object({ text: Type.String() });
  return createApp(config, {
    register: (registry) =>
      registry.register({ method: 'x-trace/echo', params, handler: ({ text }: { text: string }) => ({ text }) }, {}),
  });
}

/** The stops of the request `send` makes, from the first traced function to `Session.handle`. */
async function follow(dist: string, send: () => Promise<string>): Promise<Stop[]> {
  const stops: Stop[] = [];
  const traced = new Promise<void>((resolve) => {
    const hooks = globalThis as { __trace?: ((name: string, file: string) => void) | undefined };
    hooks.__trace = (name, file) => {
      const callers = (new Error().stack ?? '')
        .split('\n')
        .slice(3)
        .map((line) => /(?:file:\/\/)?(\/[^():\s]+\.js):\d+:\d+\)?$/.exec(line)?.[1])
        .filter((path): path is string => path?.startsWith(dist) === true)
        .map((path) => path.slice(dist.length).replace(/\.js$/, '.ts'));
      stops.push({ name, file, callers });
      if (name !== 'Session.handle') return;
      hooks.__trace = undefined;
      resolve();
    };
  });
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 200;
  try {
    const answered = send();
    await traced;
    await answered;
  } finally {
    Error.stackTraceLimit = limit;
  }
  return stops;
}

function measure(stops: readonly Stop[]): { files: number; returns: number; climbs: number } {
  const seen = new Set<string>();
  let returns = 0;
  let climbs = 0;
  stops.forEach((stop, i) => {
    if (i > 0 && stop.file !== stops[i - 1]?.file && seen.has(stop.file)) returns++;
    seen.add(stop.file);
    const [caller, ...above] = stop.callers;
    if (caller !== undefined && caller !== stop.file && above.includes(stop.file)) climbs++;
  });
  return { files: seen.size, returns, climbs };
}

function post(origin: URL, path: string, body: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${KEY}` };
    const sent = request({ host: origin.hostname, port: origin.port, path, method: 'POST', headers }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve(text));
    });
    sent.on('error', reject);
    sent.end(JSON.stringify(body));
  });
}
