import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { ClientTimeoutError, ConnectionClosedError, HttpStatusError, UnreadableFrameError } from './client-errors.js';
import { RpcError } from '../protocol/errors.js';
import { LineSplitter, type LineEvent } from '../protocol/ndjson.js';
import { RpcErrorCode } from '../protocol/codes.js';

/** A JSON-RPC frame as the client sees it. */
export type Frame = Record<string, unknown>;

export interface SendOptions {
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
  /** Notifications about this request (progress, log) as they arrive: stdio in-band, HTTP as SSE. */
  readonly onNotification?: ((frame: Frame) => void) | undefined;
  /** The `_meta.progressToken` the request carries, which its progress notifications name (§9). */
  readonly progressToken?: string | undefined;
  /** W3C trace headers of the trace the request is sent in (HTTP only; the frame's `_meta` carries it too, §17.2). */
  readonly traceHeaders?: Readonly<Record<string, string>> | undefined;
}

/** One transport: send a request frame, get its answer frame (or one of the client error types). */
export interface Channel {
  send(frame: Frame, options: SendOptions): Promise<Frame>;
  /** Fire-and-forget notification (notifications/cancel). */
  notify(frame: Frame): void;
  close(): Promise<void>;
  /** Called with notifications not tied to a request in flight. */
  onStray?: (frame: Frame) => void;
  /** Connections made so far: a restarted server is a new one, to initialize again (§13). HTTP keeps one: 1. */
  readonly generation?: number;
}

const cancelled = () => new RpcError(RpcErrorCode.Cancelled, 'cancelled by the client');

/**
 * Rejects when `signal` aborts or `timeoutMs` passes, calling `onGiveUp` (with the reason) first; cleaned up by the
 * returned function.
 */
function guard(options: SendOptions, reject: (error: Error) => void, onGiveUp: (reason: string) => void): () => void {
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          const error = new ClientTimeoutError(options.timeoutMs ?? 0);
          onGiveUp(error.message);
          reject(error);
        }, options.timeoutMs);
  const onAbort = () => {
    onGiveUp('cancelled by the client');
    reject(cancelled());
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  return () => {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  };
}

/** The most one answer may take, in bytes (a stdio line, an HTTP body): anything larger is unreadable, not buffered. */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
/**
 * JSON values one stdio answer may hold (§15.5): parsing is on the caller's event loop, and a line of 60 MB of small
 * values held it for a second. A million values is a k of 200 with vectors several times over.
 */
export const MAX_ANSWER_VALUES = 1 << 20;
/**
 * Bytes of frames written to a stdio server and not yet read by it: past this the server is not keeping up (stopped,
 * deadlocked) and a request fails at once as if the connection were gone, rather than queueing in memory.
 */
export const MAX_UNREAD_BYTES = 16 * 1024 * 1024;

/**
 * Supervision of a stdio server (a gateway's engine, §16): when the process exits it is started again after a delay
 * that doubles from `firstMs` to `maxMs` and falls back to `firstMs` once a process has run `healthyMs`. A supervised
 * process's stderr is kept (its tail goes to `onExit`) instead of inherited.
 */
export interface Supervision {
  readonly firstMs: number;
  readonly maxMs: number;
  readonly healthyMs: number;
  readonly onExit: (exit: { code: number | null; signal: string | null; stderr: string; restartInMs: number }) => void;
  /** The command could not be started at all (it is not retried). */
  readonly onSpawnError: (error: Error) => void;
}

export interface StdioOptions {
  readonly cwd?: string | undefined;
  readonly env?: NodeJS.ProcessEnv | undefined;
  readonly supervise?: Supervision | undefined;
  /** A line that is not a frame: by default it fails the connection (UnreadableFrameError); with this, it is skipped. */
  readonly onUnreadable?: ((line: string) => void) | undefined;
  readonly maxLineBytes?: number | undefined;
}

type Child = ChildProcessByStdio<Writable, Readable, Readable | null>;
interface Waiting {
  resolve: (frame: Frame) => void;
  reject: (error: Error) => void;
  options: SendOptions;
}

/**
 * §5.1 stdio: a child process speaking NDJSON (read with the protocol's LineSplitter); answers matched by id,
 * notifications routed by progress token. Unsupervised, the connection ends with the process; supervised, requests
 * in flight fail with ConnectionClosedError and a new process is started (`generation` counts them: each must be
 * initialized again, §13).
 */
export class StdioChannel implements Channel {
  #child: Child | undefined;
  readonly #waiting = new Map<unknown, Waiting>();
  #exited: Promise<void> = Promise.resolve();
  #closed = false;
  #restart: NodeJS.Timeout | undefined;
  #backoffMs: number;
  #startedAt = 0;
  generation = 0;
  onStray?: (frame: Frame) => void;

  constructor(
    private readonly command: readonly string[],
    private readonly options: StdioOptions = {},
  ) {
    if (command[0] === undefined) throw new Error('connect: empty command');
    this.#backoffMs = options.supervise?.firstMs ?? 0;
    this.#start();
  }

  send(frame: Frame, options: SendOptions): Promise<Frame> {
    if (this.#closed) return Promise.reject(new ConnectionClosedError('the connection is closed'));
    const child = this.#child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null || !child.stdin.writable) {
      return Promise.reject(new ConnectionClosedError('the server process is not running'));
    }
    if (child.stdin.writableLength > MAX_UNREAD_BYTES) {
      return Promise.reject(new ConnectionClosedError('the server process is not reading its input'));
    }
    return new Promise<Frame>((resolve, reject) => {
      const done = guard(options, reject, (reason) => {
        this.#waiting.delete(frame.id);
        // §7.14: tell the server to stop working on it.
        this.notify({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id: frame.id, reason } });
      });
      this.#waiting.set(frame.id, {
        resolve: (answer) => (done(), resolve(answer)),
        reject: (error) => (done(), reject(error)),
        options,
      });
      child.stdin.write(`${JSON.stringify(frame)}\n`);
    });
  }

  notify(frame: Frame): void {
    const child = this.#child;
    if (this.#closed || child === undefined || !child.stdin.writable) return;
    // A notification to a server that is not reading is dropped: cancels are advisory (§7.14).
    if (child.stdin.writableLength <= MAX_UNREAD_BYTES) child.stdin.write(`${JSON.stringify(frame)}\n`);
  }

  /** Ends stdin (the server drains and exits, §5.1) and waits for the process; a supervised one is not restarted. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#restart);
    const child = this.#child;
    if (child === undefined) return;
    child.stdin.end();
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    await this.#exited;
    clearTimeout(kill);
  }

  #start(): void {
    const [file, ...args] = this.command as [string, ...string[]];
    const supervise = this.options.supervise;
    const child = spawn(file, args, {
      cwd: this.options.cwd,
      env: this.options.env,
      stdio: ['pipe', 'pipe', supervise === undefined ? 'inherit' : 'pipe'],
    }) as Child;
    this.#child = child;
    this.#startedAt = Date.now();
    this.generation++;
    child.stdin.on('error', () => undefined); // a dead child's pipe; the close handler does the rest
    const splitter = new LineSplitter(this.options.maxLineBytes ?? MAX_ANSWER_BYTES, MAX_ANSWER_VALUES);
    child.stdout.on('data', (chunk: Buffer) => this.#onEvents(splitter.push(chunk)));
    child.stdout.once('end', () => this.#onEvents(splitter.end()));
    let stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4096)));
    let spawned = false;
    child.once('spawn', () => (spawned = true));
    this.#exited = new Promise((resolve) =>
      child.once('close', (code: number | null, signal: string | null) => {
        this.#ended(code, signal, spawned, stderr);
        resolve();
      }),
    );
    child.once('error', (error) => {
      supervise?.onSpawnError(error);
      this.#rejectAll(new ConnectionClosedError(`cannot start the server: ${error.message}`));
      if (supervise === undefined) this.#closed = true;
    });
  }

  /** The process is gone: its requests fail; a supervised one that had started is started again after the backoff. */
  #ended(code: number | null, signal: string | null, spawned: boolean, stderr: string): void {
    const supervise = this.options.supervise;
    if (supervise === undefined || this.#closed)
      return this.#fail(new ConnectionClosedError('the server process exited'));
    this.#rejectAll(new ConnectionClosedError(`the server process exited (${signal ?? code})`));
    if (!spawned) return; // reported through onSpawnError
    if (Date.now() - this.#startedAt > supervise.healthyMs) this.#backoffMs = supervise.firstMs;
    supervise.onExit({ code, signal, stderr: stderr.slice(-500), restartInMs: this.#backoffMs });
    this.#restart = setTimeout(() => this.#start(), this.#backoffMs);
    this.#restart.unref();
    this.#backoffMs = Math.min(supervise.maxMs, this.#backoffMs * 2);
  }

  #fail(error: Error): void {
    this.#closed = true;
    this.#rejectAll(error);
  }

  #rejectAll(error: Error): void {
    for (const waiting of [...this.#waiting.values()]) waiting.reject(error);
    this.#waiting.clear();
  }

  /** A notification goes to the request it names (progress token, or the log's `_meta.requestId`), else stray. */
  #route(frame: Frame): void {
    const params = (frame.params ?? {}) as Frame;
    const meta = (params._meta ?? {}) as Frame;
    const token = params.progressToken ?? meta.progressToken;
    for (const [id, waiting] of this.#waiting) {
      const mine = (token !== undefined && token === waiting.options.progressToken) || meta.requestId === id;
      if (mine && waiting.options.onNotification !== undefined) return waiting.options.onNotification(frame);
    }
    this.onStray?.(frame);
  }

  #onEvents(events: Iterable<LineEvent>): void {
    for (const event of events) {
      if (event.kind === 'line') this.#onLine(event.text);
      else
        this.#unreadable(
          event.kind === 'oversized' ? `a line of over ${event.bytes} bytes` : 'a line of too many values',
        );
    }
  }

  #unreadable(line: string): void {
    if (this.options.onUnreadable !== undefined) return this.options.onUnreadable(line);
    this.#fail(new UnreadableFrameError(line));
  }

  #onLine(line: string): void {
    let frame: unknown;
    try {
      frame = JSON.parse(line);
    } catch {
      return this.#unreadable(line);
    }
    if (typeof frame !== 'object' || frame === null) return this.#unreadable(line);
    const answers = Array.isArray(frame) ? (frame as Frame[]) : [frame as Frame];
    for (const answer of answers) {
      if (typeof answer !== 'object' || answer === null) continue;
      if (!('id' in answer)) {
        this.#route(answer);
        continue;
      }
      const waiting = this.#waiting.get(answer.id);
      if (waiting === undefined) continue;
      this.#waiting.delete(answer.id);
      waiting.resolve(answer);
    }
  }
}

/**
 * §5.2 HTTP: POST <base>/<method> on fetch's pooled keep-alive connections; SSE when notifications are wanted; the
 * session token carried once issued. An answer is read whole, up to `maxAnswerBytes` (§15.5: a broken server costs
 * one call, not the client's memory).
 */
export class HttpChannel implements Channel {
  readonly generation = 1;
  #session: string | undefined;
  onStray?: (frame: Frame) => void;

  constructor(
    private readonly base: string,
    private readonly headers: Readonly<Record<string, string>>,
    private readonly maxAnswerBytes = MAX_ANSWER_BYTES,
  ) {}

  async send(frame: Frame, options: SendOptions): Promise<Frame> {
    const controller = new AbortController();
    return new Promise<Frame>((resolve, reject) => {
      const done = guard(options, reject, () => controller.abort());
      this.#post(frame, options, controller.signal).then(
        (answer) => (done(), resolve(answer)),
        (error: Error) => (done(), reject(controller.signal.aborted ? cancelled() : error)),
      );
    });
  }

  notify(frame: Frame): void {
    void this.#fetch(String(frame.method), JSON.stringify(frame), {}).catch(() => undefined);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  async #post(frame: Frame, options: SendOptions, signal: AbortSignal): Promise<Frame> {
    const streaming = options.onNotification !== undefined;
    let response: Response;
    try {
      response = await this.#fetch(
        String(frame.method),
        JSON.stringify(frame),
        { ...options.traceHeaders, ...(streaming ? { accept: 'text/event-stream' } : {}) },
        signal,
      );
    } catch (error) {
      if (signal.aborted) throw error;
      throw new ConnectionClosedError(`HTTP request failed: ${(error as Error).message}`);
    }
    const session = response.headers.get('rcp-session');
    if (session !== null) this.#session = session;
    const text = await readBounded(response, this.maxAnswerBytes).catch((error: unknown) => {
      // A connection dropped while the answer was read: no answer, as when it drops before (not a bug of ours).
      if (signal.aborted || error instanceof UnreadableFrameError) throw error;
      throw new ConnectionClosedError(`HTTP answer cut off: ${(error as Error).message}`);
    });
    if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
      let final: Frame | undefined;
      for (const event of text.split('\n\n')) {
        const data = event
          .split('\n')
          .filter((line) => line.startsWith('data: '))
          .map((line) => line.slice(6))
          .join('\n');
        if (data === '') continue;
        const parsed = parse(data);
        if ('id' in parsed) final = parsed;
        else options.onNotification?.(parsed);
      }
      if (final === undefined) throw new UnreadableFrameError(text);
      return this.#remember(final);
    }
    if (text === '' && response.status === 204) return {};
    let answer: Frame | undefined;
    try {
      answer = parse(text);
    } catch (error) {
      if (response.status === 200) throw error;
    }
    // §5.2: every JSON-RPC answer is HTTP 200; anything else without a JSON-RPC frame is the HTTP layer's.
    if (answer === undefined || answer.jsonrpc !== '2.0') {
      if (response.status !== 200) {
        throw new HttpStatusError(response.status, text, response.headers.get('retry-after') ?? undefined);
      }
      throw new UnreadableFrameError(text);
    }
    return this.#remember(answer);
  }

  /** §5.2: initialize's `_meta.session` is the token later requests carry. */
  #remember(answer: Frame): Frame {
    const meta = ((answer.result as Frame | undefined)?._meta ?? {}) as Frame;
    if (typeof meta.session === 'string') this.#session = meta.session;
    return answer;
  }

  #fetch(method: string, body: string, extra: Record<string, string>, signal?: AbortSignal): Promise<Response> {
    return fetch(`${this.base}/${method}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...this.headers,
        // §5.2 sessions: until the server issues a token (`initialize.result._meta.session`), ask for a fresh one, so
        // two clients on one host never share a session; a server without tokens ignores the header. `initialize`
        // always asks for a fresh one: a client initializing again (its server restarted) never reuses a dead token.
        'rcp-session': method === 'initialize' ? 'new' : (this.#session ?? 'new'),
        ...extra,
      },
      body,
      signal: signal ?? null,
    });
  }
}

/** The body as text, refused (UnreadableFrameError) once it passes `limit` bytes, declared or read. */
async function readBounded(response: Response, limit: number): Promise<string> {
  const over = (bytes: number) => new UnreadableFrameError(`an answer of over ${bytes} bytes (the limit is ${limit})`);
  const declared = Number(response.headers.get('content-length') ?? 0);
  if (declared > limit) {
    await response.body?.cancel();
    throw over(declared);
  }
  if (response.body === null) return '';
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    bytes += read.value.byteLength;
    if (bytes > limit) {
      await reader.cancel();
      throw over(bytes);
    }
    chunks.push(read.value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parse(text: string): Frame {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UnreadableFrameError(text);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UnreadableFrameError(text);
  return value as Frame;
}
