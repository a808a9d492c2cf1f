import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApp, type App } from '../../src/app.js';
import { DERIVED_ENVIRONMENT, ENVIRONMENT, loadConfig, type ConfigOverrides } from '../../src/config/index.js';
import { parseFrame, serialize } from '../../src/protocol/frames.js';
import type { Session } from '../../src/protocol/session.js';
import { registerTestMethods } from '../fixtures/test-methods.js';
import { EVENT_TIMEOUT_MS, track } from './children.js';
import { assertValidFrame } from './schema.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const TRANSPORTS = ['in-process', 'stdio', 'http'] as const;
export type TransportName = (typeof TRANSPORTS)[number];
export type Id = string | number;
export type Frame = Record<string, unknown>;

/**
 * One client connection to a fresh server, the same scenario API over every transport (docs/architecture.md §13).
 * Every frame the server emits is validated against the project's schemas of RCP frames before a test sees it.
 */
export interface Connection {
  readonly transport: TransportName;
  /** Sends a frame (an object, or raw text sent as is) without waiting. */
  send(frame: object | string): void;
  /** The answer to the request with this id. */
  reply(id: Id): Promise<Frame>;
  /** Sends a frame and resolves with the one answer it must get (any id, e.g. null for -32700). */
  exchange(frame: object | string): Promise<Frame | Frame[]>;
  /** Sends a frame and proves the server answers nothing for it (§4.5). */
  silent(frame: object | string): Promise<void>;
  /** Notifications the server sent so far (progress, over stdio or in-process; SSE is tested apart). */
  readonly notifications: Frame[];
  /** HTTP only: the server's origin (`http://127.0.0.1:PORT`), for requests the helper does not model (SSE). */
  readonly origin?: string | undefined;
  close(): Promise<void>;
}

export interface ServerOptions {
  /** Configuration overrides by dotted path (`limits.maxBatchSize`). */
  config?: ConfigOverrides;
}

let nextSentinel = 0;

export function request(id: Id, method: string, params: object = {}): Frame {
  return { jsonrpc: '2.0', id, method, params };
}

export const INITIALIZE = (id: Id = 'init'): Frame =>
  request(id, 'initialize', { protocolVersion: 1, client: { name: 'wire-test', version: '1' }, capabilities: {} });

/** The stdin of a stdio session that initializes, then retrieves `query` lexically; and the texts of its hits. */
export const STDIO_RETRIEVE = {
  input: (query: string): string =>
    [INITIALIZE(1), request(2, 'retrieve', { query, k: 10, mode: 'sparse' })]
      .map((frame) => JSON.stringify(frame))
      .join('\n') + '\n',
  texts(stdout: string): string[] {
    const answers = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Frame);
    const result = answers.find((answer) => answer.id === 2)?.result as { hits: { text: string }[] } | undefined;
    return (result?.hits ?? []).map((hit) => hit.text);
  },
};

/**
 * Protocol scenarios need no model: servers start without one unless a test configures it. Each server gets its
 * own fresh data directory, so no test ever writes into the repository's indexes/.
 */
const defaults = (): ConfigOverrides => ({
  'models.encoder': 'none',
  dataDir: mkdtempSync(join(tmpdir(), 'rcp-data-')),
});

export function testConfig(overrides: ConfigOverrides = {}) {
  return loadConfig({ overrides: { 'log.level': 'silent', ...defaults(), ...overrides } });
}

export function connect(transport: TransportName, options: ServerOptions = {}): Promise<Connection> {
  return Promise.resolve(open(transport, options));
}

function open(transport: TransportName, options: ServerOptions): Connection {
  switch (transport) {
    case 'in-process':
      return inProcess(createApp(testConfig(options.config), { register: registerTestMethods }));
    case 'stdio':
      return stdio(options);
    case 'http':
      return http(createApp(testConfig({ 'http.port': 0, ...options.config }), { register: registerTestMethods }));
  }
}

function methodOf(frame: object | string): string | undefined {
  if (typeof frame === 'string') return undefined;
  const method = (frame as { method?: unknown }).method;
  return typeof method === 'string' ? method : undefined;
}

/** Responses keyed by arrival, with waiters; shared by the stream-based transports. */
class Inbox {
  readonly notifications: Frame[] = [];
  readonly #responses: (Frame | Frame[])[] = [];
  #waiters: (() => void)[] = [];
  readonly #methods = new Map<Id, string>();

  expectMethod(frame: object | string): void {
    if (typeof frame === 'string') return;
    const { id } = frame as { id?: unknown };
    const method = methodOf(frame);
    if ((typeof id === 'string' || typeof id === 'number') && method !== undefined) this.#methods.set(id, method);
  }

  accept(frame: unknown): void {
    const method = !Array.isArray(frame) ? this.#methods.get((frame as { id: Id }).id) : undefined;
    assertValidFrame(frame, method);
    if (!Array.isArray(frame) && typeof frame === 'object' && frame !== null && !('id' in frame)) {
      this.notifications.push(frame as Frame);
    } else {
      this.#responses.push(frame as Frame | Frame[]);
    }
    this.#waiters.splice(0).forEach((wake) => wake());
  }

  async take(
    match: (frame: Frame | Frame[]) => boolean,
    what: string,
    timeoutMs = EVENT_TIMEOUT_MS,
  ): Promise<Frame | Frame[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.#responses.findIndex(match);
      if (index !== -1) return this.#responses.splice(index, 1)[0]!;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  get pending(): number {
    return this.#responses.length;
  }
}

function streamConnection(
  transport: TransportName,
  write: (text: string) => void,
  inbox: Inbox,
  close: () => Promise<void>,
): Connection {
  const send = (frame: object | string): void => {
    inbox.expectMethod(frame);
    write(typeof frame === 'string' ? frame : serialize(frame));
  };
  return {
    transport,
    notifications: inbox.notifications,
    send,
    reply: async (id) =>
      (await inbox.take((f) => !Array.isArray(f) && f.id === id, `reply to ${JSON.stringify(id)}`)) as Frame,
    exchange: async (frame) => {
      send(frame);
      // A request with a usable id is answered by that id (or by null, when the server could not read it); anything
      // else (a batch, raw text, an odd id) by the next answer to arrive.
      const id = typeof frame === 'object' && !Array.isArray(frame) ? (frame as { id?: unknown }).id : undefined;
      const keyed = typeof id === 'string' || typeof id === 'number';
      const answers = (f: Frame | Frame[]) => !keyed || (!Array.isArray(f) && (f.id === id || f.id === null));
      return inbox.take(answers, `answer to ${typeof frame === 'string' ? frame.slice(0, 80) : serialize(frame)}`);
    },
    silent: async (frame) => {
      const before = inbox.pending;
      send(frame);
      // A ping sent after the frame is answered after it (or concurrently); then wait a little for stragglers.
      const sentinel = `sentinel-${nextSentinel++}`;
      send(request(sentinel, 'ping'));
      await inbox.take((f) => !Array.isArray(f) && f.id === sentinel, 'sentinel ping');
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (inbox.pending !== before) throw new Error(`server answered a frame it must not answer: ${serialize(frame)}`);
    },
    close,
  };
}

function inProcess(app: App): Connection {
  const inbox = new Inbox();
  const session: Session = app.createSession();
  // Delivered in a later turn, as a real transport would: a client looping on answers the server gives without any
  // I/O (an empty index) would otherwise run on microtasks alone and starve the server's own I/O.
  const roundTrip = (frame: unknown): void => {
    const text = serialize(frame);
    setImmediate(() => inbox.accept(JSON.parse(text)));
  };
  const write = (text: string): void => {
    const parsed = parseFrame(text);
    if (!parsed.ok) return roundTrip(parsed.reply);
    void session.handle(parsed.value, roundTrip).then((reply) => reply !== undefined && roundTrip(reply));
  };
  return streamConnection('in-process', write, inbox, () => app.close());
}

export interface StdioChild {
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  exited: Promise<number | null>;
}

/**
 * Spawns the stdio fixture server (real transport, real process) with RCP_* settings from `config`; it is ended when
 * the file's tests are done if the test has not stopped it (children.ts).
 */
export function spawnStdio(options: ServerOptions = {}, argv?: string[]): StdioChild {
  const env: NodeJS.ProcessEnv = { ...process.env, RCP_LOG_LEVEL: 'warn' };
  for (const [path, value] of Object.entries({ ...defaults(), ...options.config })) setEnv(env, path, value);
  const args = argv ?? ['--import', 'tsx', 'test/fixtures/serve-stdio.ts'];
  const child = track(spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] }));
  // A test may outlive the child (it exits after shutdown); late writes must not crash the runner.
  child.stdin.on('error', () => undefined);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, stderr: () => stderr, exited };
}

/** Sets a dotted config path through the server's own RCP_* variables (a section through each of its settings). */
function setEnv(env: NodeJS.ProcessEnv, path: string, value: unknown): void {
  const own = Object.entries(DERIVED_ENVIRONMENT).find(([, setting]) => setting.path === path)?.[0];
  if (own === undefined && typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const [key, inner] of Object.entries(value)) setEnv(env, `${path}.${key}`, inner);
    return;
  }
  const name = own ?? Object.entries(ENVIRONMENT).find(([, setting]) => setting.path === path)?.[0];
  if (name === undefined) throw new Error(`no environment variable sets ${path}`);
  env[name] = typeof value === 'string' ? value : JSON.stringify(value);
}

/** Reads NDJSON frames from a child's stdout; a line that is not JSON fails the test (§5.1 stdout is protocol-only). */
export function readFrames(child: ChildProcessWithoutNullStreams, onFrame: (frame: unknown) => void): void {
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let newline;
    while ((newline = buffered.indexOf('\n')) !== -1) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      onFrame(JSON.parse(line));
    }
  });
}

function stdio(options: ServerOptions): Connection {
  const inbox = new Inbox();
  const server = spawnStdio(options);
  const failures: unknown[] = [];
  readFrames(server.child, (frame) => {
    try {
      inbox.accept(frame);
    } catch (error) {
      failures.push(error);
    }
  });
  const connection = streamConnection(
    'stdio',
    (text) => server.child.stdin.write(`${text}\n`),
    inbox,
    async () => {
      server.child.stdin.end();
      // §5.1 end of input: the server drains and exits; a bound against a hang, not a figure for how fast.
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise((resolve) => (timer = setTimeout(resolve, EVENT_TIMEOUT_MS, 'timeout')));
      const code = await Promise.race([server.exited, bound]).finally(() => clearTimeout(timer));
      if (code === 'timeout') server.child.kill('SIGKILL');
      if (failures.length > 0) throw failures[0];
      if (code === 'timeout')
        throw new Error(`stdio server did not exit within ${EVENT_TIMEOUT_MS} ms of end of input`);
      if (code !== 0) throw new Error(`stdio server exited with ${String(code)}: ${server.stderr()}`);
    },
  );
  return connection;
}

/** HTTP over a real socket: one POST per frame to <base>/<method> (or <base> for raw text and batches). */
let nextSession = 0;

/**
 * One client over HTTP: its own session named in the path (§5.2), so the §13 lifecycle and §7.14 cancellation hold
 * as they do over a stdio pipe.
 */
function http(app: App): Connection {
  const session = `conn-${nextSession++}`;
  const notifications: Frame[] = [];
  const inFlight = new Map<Id, Promise<Frame>>();
  let origin: Promise<string> | undefined;
  let resolved: string | undefined;
  const base = (): Promise<string> =>
    (origin ??= app.buildHttp().then((server) => server.listen({ host: '127.0.0.1', port: 0 }))).then((o) => {
      resolved = o;
      return `${o}/rcp/sessions/${session}`;
    });

  const post = async (frame: object | string): Promise<{ status: number; body: unknown }> => {
    const method = methodOf(frame);
    const response = await fetch(`${await base()}${method === undefined ? '' : `/${method}`}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof frame === 'string' ? frame : serialize(frame),
    });
    const text = await response.text();
    const body = text === '' ? undefined : (JSON.parse(text) as unknown);
    if (body !== undefined) {
      const id = !Array.isArray(body) ? (body as { id?: unknown }).id : undefined;
      assertValidFrame(body, id !== undefined && id !== null ? method : undefined);
    }
    return { status: response.status, body };
  };
  const answered = async (frame: object | string): Promise<Frame | Frame[]> => {
    const { status, body } = await post(frame);
    // §5.2: every JSON-RPC answer, errors included, is HTTP 200.
    if (status !== 200 || body === undefined) throw new Error(`expected HTTP 200 with a body, got ${status}`);
    return body as Frame | Frame[];
  };
  return {
    transport: 'http',
    get origin() {
      return resolved;
    },
    notifications,
    send: (frame) => {
      const id = typeof frame === 'string' ? undefined : (frame as { id?: Id }).id;
      const result = answered(frame) as Promise<Frame>;
      if (id !== undefined) inFlight.set(id, result);
      else void result.catch(() => undefined);
    },
    reply: async (id) => {
      const pending = inFlight.get(id);
      if (pending === undefined) throw new Error(`nothing in flight with id ${JSON.stringify(id)}`);
      inFlight.delete(id);
      return pending;
    },
    exchange: answered,
    silent: async (frame) => {
      const { status, body } = await post(frame);
      // §5.2: a notification is answered 204 with no body.
      if (status !== 204 || body !== undefined)
        throw new Error(`expected 204 and no body, got ${status} ${serialize(body)}`);
    },
    close: () => app.close(),
  };
}
