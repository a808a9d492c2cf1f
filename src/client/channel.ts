import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import {
  ClientTimeoutError,
  ConnectionClosedError,
  HttpStatusError,
  RcpError,
  UnreadableFrameError,
} from './client-errors.js';

/** A JSON-RPC frame as the client sees it. */
export type Frame = Record<string, unknown>;

export interface SendOptions {
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
  /** Notifications about this request (progress, log) as they arrive: stdio in-band, HTTP as SSE. */
  readonly onNotification?: ((frame: Frame) => void) | undefined;
  /** The `_meta.progressToken` the request carries, which its progress notifications name (§9). */
  readonly progressToken?: string | undefined;
}

/** One transport: send a request frame, get its answer frame (or one of the client error types). */
export interface Channel {
  send(frame: Frame, options: SendOptions): Promise<Frame>;
  /** Fire-and-forget notification (notifications/cancel). */
  notify(frame: Frame): void;
  close(): Promise<void>;
  /** Called with notifications not tied to a request in flight. */
  onStray?: (frame: Frame) => void;
}

const cancelled = () => new RcpError(-32006, 'cancelled by the client');

/** Rejects when `signal` aborts or `timeoutMs` passes, calling `onGiveUp` first; cleaned up by the returned function. */
function guard(options: SendOptions, reject: (error: Error) => void, onGiveUp: () => void): () => void {
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          onGiveUp();
          reject(new ClientTimeoutError(options.timeoutMs ?? 0));
        }, options.timeoutMs);
  const onAbort = () => {
    onGiveUp();
    reject(cancelled());
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  return () => {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  };
}

/** §5.1 stdio: a child process speaking NDJSON; answers matched by id, notifications routed by progress token. */
export class StdioChannel implements Channel {
  readonly #child: ChildProcessByStdio<Writable, Readable, null>;
  readonly #waiting = new Map<
    unknown,
    { resolve: (frame: Frame) => void; reject: (error: Error) => void; options: SendOptions }
  >();
  readonly #exited: Promise<void>;
  #closed = false;
  onStray?: (frame: Frame) => void;

  constructor(
    command: readonly string[],
    options: { cwd?: string | undefined; env?: NodeJS.ProcessEnv | undefined } = {},
  ) {
    const [file, ...args] = command;
    if (file === undefined) throw new Error('connect: empty command');
    this.#child = spawn(file, args, { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'inherit'] });
    this.#child.stdin.on('error', () => undefined);
    let buffered = '';
    this.#child.stdout.setEncoding('utf8');
    this.#child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      let newline;
      while ((newline = buffered.indexOf('\n')) !== -1) {
        this.#onLine(buffered.slice(0, newline));
        buffered = buffered.slice(newline + 1);
      }
    });
    this.#exited = new Promise((resolve) => this.#child.once('close', () => resolve()));
    void this.#exited.then(() => this.#fail(new ConnectionClosedError('the server process exited')));
    this.#child.once('error', (error) =>
      this.#fail(new ConnectionClosedError(`cannot start the server: ${error.message}`)),
    );
  }

  send(frame: Frame, options: SendOptions): Promise<Frame> {
    if (this.#closed) return Promise.reject(new ConnectionClosedError('the connection is closed'));
    return new Promise<Frame>((resolve, reject) => {
      const done = guard(options, reject, () => {
        this.#waiting.delete(frame.id);
        this.notify({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id: frame.id } });
      });
      this.#waiting.set(frame.id, {
        resolve: (answer) => (done(), resolve(answer)),
        reject: (error) => (done(), reject(error)),
        options,
      });
      this.#child.stdin.write(`${JSON.stringify(frame)}\n`);
    });
  }

  notify(frame: Frame): void {
    if (!this.#closed && this.#child.stdin.writable) this.#child.stdin.write(`${JSON.stringify(frame)}\n`);
  }

  /** Ends stdin (the server drains and exits, §5.1) and waits for the process. */
  async close(): Promise<void> {
    this.#child.stdin.end();
    const kill = setTimeout(() => this.#child.kill('SIGKILL'), 5000);
    await this.#exited;
    clearTimeout(kill);
  }

  #fail(error: Error): void {
    this.#closed = true;
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

  #onLine(line: string): void {
    if (line.trim() === '') return;
    let frame: unknown;
    try {
      frame = JSON.parse(line);
    } catch {
      return this.#fail(new UnreadableFrameError(line));
    }
    if (typeof frame !== 'object' || frame === null) return this.#fail(new UnreadableFrameError(line));
    const answers = Array.isArray(frame) ? (frame as Frame[]) : [frame as Frame];
    for (const answer of answers) {
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

/** §5.2 HTTP: POST <base>/<method>; SSE when notifications are wanted; the session token carried once issued. */
export class HttpChannel implements Channel {
  #session: string | undefined;
  onStray?: (frame: Frame) => void;

  constructor(
    private readonly base: string,
    private readonly headers: Readonly<Record<string, string>>,
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
        streaming ? { accept: 'text/event-stream' } : {},
        signal,
      );
    } catch (error) {
      if (signal.aborted) throw error;
      throw new ConnectionClosedError(`HTTP request failed: ${(error as Error).message}`);
    }
    const session = response.headers.get('rcp-session');
    if (session !== null) this.#session = session;
    const text = await response.text();
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
        // two clients on one host never share a session; a server without tokens ignores the header.
        'rcp-session': this.#session ?? 'new',
        ...extra,
      },
      body,
      signal: signal ?? null,
    });
  }
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
