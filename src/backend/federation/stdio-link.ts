import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { JsonObject } from '../../protocol/messages.js';
import type { Logger } from '../../protocol/logger.js';
import { LinkError, type Link, type ResponseFrame } from './link.js';

interface Waiting {
  resolve: (frame: ResponseFrame) => void;
  reject: (error: Error) => void;
}

/**
 * An engine spawned as a child process speaking NDJSON on stdin/stdout (§5.1), supervised: when it exits, requests in
 * flight fail with `closed` and it is restarted with exponential backoff (250 ms doubling to 10 s, reset after a
 * minute of health). The tail of its stderr goes into the gateway's log when it exits. It runs with the gateway's
 * environment minus the gateway's own RCP_* settings, plus the registry entry's `env`.
 */
export class StdioLink implements Link {
  #child: ChildProcessWithoutNullStreams | undefined;
  readonly #waiting = new Map<number, Waiting>();
  #nextId = 1;
  #closing = false;
  #backoffMs = 250;
  #startedAt = 0;
  #restart: NodeJS.Timeout | undefined;
  generation = 0;

  constructor(
    private readonly name: string,
    private readonly command: readonly string[],
    private readonly log: Logger,
    private readonly env: Readonly<Record<string, string>> = {},
  ) {
    this.#spawn();
  }

  request(method: string, params: JsonObject, timeoutMs: number, signal?: AbortSignal): Promise<ResponseFrame> {
    const child = this.#child;
    if (child === undefined || child.exitCode !== null || !child.stdin.writable) {
      return Promise.reject(new LinkError('closed', `engine ${this.name} is not running`));
    }
    const id = this.#nextId++;
    return new Promise<ResponseFrame>((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#waiting.delete(id);
      };
      const abandon = (error: LinkError) => {
        finish();
        // §7.14: tell the engine to stop working on it.
        this.#write({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id, reason: error.message } });
        reject(error);
      };
      const timer = setTimeout(
        () => abandon(new LinkError('timeout', `engine ${this.name}: no answer in ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onAbort = () => abandon(new LinkError('cancelled', `engine ${this.name}: request cancelled`));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.set(id, {
        resolve: (frame) => {
          finish();
          resolve(frame);
        },
        reject: (error) => {
          finish();
          reject(error);
        },
      });
      this.#write({ jsonrpc: '2.0', id, method, params });
    });
  }

  async close(): Promise<void> {
    this.#closing = true;
    clearTimeout(this.#restart);
    const child = this.#child;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.stdin.end();
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(kill);
  }

  #write(frame: JsonObject): void {
    const child = this.#child;
    if (child !== undefined && child.stdin.writable) child.stdin.write(`${JSON.stringify(frame)}\n`);
  }

  #spawn(): void {
    const [file, ...args] = this.command;
    if (file === undefined) throw new Error(`engine ${this.name}: empty command`);
    // The gateway's RCP_* variables configure the gateway, not its engines (a data dir or port must not leak down).
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RCP_')));
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...inherited, ...this.env } });
    this.#child = child;
    this.#startedAt = Date.now();
    this.generation++;
    child.stdin.on('error', () => undefined); // a dead child's pipe; the exit handler does the rest
    let buffered = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      let newline;
      while ((newline = buffered.indexOf('\n')) !== -1) {
        this.#onLine(buffered.slice(0, newline));
        buffered = buffered.slice(newline + 1);
      }
    });
    let errText = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      errText = (errText + chunk).slice(-4096);
    });
    child.once('error', (error) => this.log.warn({ engine: this.name, err: error }, 'engine could not be started'));
    child.once('exit', (code, signal) => {
      for (const waiting of [...this.#waiting.values()]) {
        waiting.reject(new LinkError('closed', `engine ${this.name} exited (${signal ?? code})`));
      }
      this.#waiting.clear();
      if (this.#closing) return;
      if (Date.now() - this.#startedAt > 60_000) this.#backoffMs = 250;
      this.log.warn(
        { engine: this.name, code, signal, stderr: errText.slice(-500), restartInMs: this.#backoffMs },
        'engine exited; restarting',
      );
      this.#restart = setTimeout(() => this.#spawn(), this.#backoffMs);
      this.#restart.unref();
      this.#backoffMs = Math.min(10_000, this.#backoffMs * 2);
    });
  }

  #onLine(line: string): void {
    if (line.trim() === '') return;
    let frame: ResponseFrame & { id?: unknown };
    try {
      frame = JSON.parse(line) as ResponseFrame & { id?: unknown };
    } catch {
      this.log.warn({ engine: this.name, line: line.slice(0, 200) }, 'engine wrote a line that is not JSON');
      return;
    }
    if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) return;
    const { id } = frame;
    if (typeof id !== 'number') return; // notifications (progress, log) are not forwarded
    this.#waiting.get(id)?.resolve(frame);
  }
}
