import type { Readable, Writable } from 'node:stream';
import { RpcError } from '../protocol/errors.js';
import { inlineCodec, type FrameCodec } from '../protocol/frame-codec.js';
import { parseFrame, serialize } from '../protocol/frames.js';
import { failure, isJsonObject } from '../protocol/messages.js';
import { LineSplitter, refusalOf } from '../protocol/ndjson.js';
import { mergeReplies, screen, type Screened } from '../protocol/screen.js';
import type { Session, SessionOptions } from '../protocol/session.js';
import type { Admission } from './admission.js';
import type { Logger } from '../protocol/logger.js';

export interface StdioOptions {
  input: Readable;
  output: Writable;
  /** Builds the one session this connection carries; the transport supplies its shutdown hook. */
  createSession(options: SessionOptions): Session;
  /** The largest frame accepted, in bytes; a longer line is answered -32013 and discarded (§15.5). */
  maxLineBytes: number;
  /** JSON values per frame at most; a frame with more is answered -32013 and discarded unparsed (§15.5). */
  maxFrameValues?: number | undefined;
  /** The largest answer, in bytes; a larger one is -32013 per member (§15.5). */
  maxResponseBytes: number;
  /** Serialises answers (large ones off the event loop); inline by default. Frames are parsed here, in order. */
  codec?: FrameCodec | undefined;
  /** Frames handled at once; past it, stdin is not read until one finishes (backpressure on the client, §15.5). */
  maxInFlight: number;
  log: Logger;
  /** Load shedding and rate limits; the connection is one caller (`stdio`). */
  admission?: Admission | undefined;
}

function isShutdown(value: unknown): boolean {
  return (Array.isArray(value) ? value : [value]).some(
    (member) => isJsonObject(member) && member.method === 'shutdown' && 'id' in member,
  );
}

export interface StdioConnection {
  /** Resolves once the connection is over (EOF, shutdown or a dead pipe) and every answer is flushed. */
  readonly closed: Promise<void>;
}

/**
 * §5.1 stdio: NDJSON over streams passed in (docs/architecture.md §4.2). Requests are handled concurrently — a line is
 * never awaited before the next is read — and answers go out in one ordered stream as they complete.
 * stdout carries protocol frames only. EOF and `shutdown` stop reading, drain in-flight requests, then close.
 */
export function serveStdio(options: StdioOptions): StdioConnection {
  return new StdioServer(options);
}

class StdioServer implements StdioConnection {
  readonly closed: Promise<void>;
  readonly #options: StdioOptions;
  readonly #splitter: LineSplitter;
  readonly #session: Session;
  readonly #codec: FrameCodec;
  readonly #pending = new Set<Promise<void>>();
  /** Lines read but not yet dispatched: at most one chunk's worth, since reading pauses while any wait. */
  readonly #backlog: string[] = [];
  #accepting = true;
  #inputEnded = false;
  #dead = false;
  #draining = false;
  #finish: () => void = () => undefined;
  /** Admission may wait on Redis: the frame admitted last, and how many wait behind it (see `#admitInOrder`). */
  #previous: Promise<unknown> = Promise.resolve();
  #waiting = 0;

  constructor(options: StdioOptions) {
    this.#options = options;
    this.#splitter = new LineSplitter(options.maxLineBytes, options.maxFrameValues);
    this.#session = options.createSession({ onShutdown: () => this.#stopReading() });
    this.#codec = options.codec ?? inlineCodec;
    this.closed = new Promise<void>((resolve) => (this.#finish = resolve));
    this.#listen();
  }

  #listen(): void {
    const { input, output, log } = this.#options;
    input.on('data', this.#onData);
    const ended = (): void => {
      if (this.#inputEnded) return;
      for (const event of this.#splitter.end()) if (event.kind === 'line') this.#backlog.push(event.text);
      this.#inputEnded = true;
      this.#pump();
    };
    input.once('end', ended);
    // Destroyed rather than ended (the server's own SIGTERM, or a fatal start-up finding): no 'end' comes.
    input.once('close', ended);
    input.once('error', (error) => {
      log.warn({ err: error }, 'stdin failed');
      this.#stopReading();
    });
    output.on('error', (error) => {
      // §13.1 transport death: in-flight requests are abandoned, not answered.
      log.warn({ err: error }, 'stdout closed');
      this.#dead = true;
      this.#session.abortAll(RpcError.cancelled('transport closed'));
      this.#stopReading();
    });
  }

  /**
   * Read only while there is room for more work and the reader keeps up with the answers: a client that pipelines
   * thousands of requests, or stops reading, holds at most `maxInFlight` requests and their answers in memory.
   */
  #flowControl(): void {
    if (!this.#accepting || this.#inputEnded) return;
    const { input, maxInFlight } = this.#options;
    if (this.#draining || this.#backlog.length > 0 || this.#pending.size >= maxInFlight) input.pause();
    else input.resume();
  }

  /** Dispatches what was read while there is room, and never while stdout is not taking answers (§15.5). */
  #pump(): void {
    const room = () => this.#pending.size < this.#options.maxInFlight && !this.#draining;
    while (this.#accepting && this.#backlog.length > 0 && room()) {
      this.#dispatch(this.#backlog.shift()!);
    }
    if (this.#inputEnded && this.#backlog.length === 0) this.#stopReading();
    this.#flowControl();
  }

  #writeText(text: string | Buffer): void {
    if (this.#dead) return;
    const { output } = this.#options;
    let written: boolean;
    if (typeof text === 'string') written = output.write(`${text}\n`);
    else {
      output.write(text);
      written = output.write('\n'); // the last write says whether the stream is past its mark
    }
    if (!written && !this.#draining) {
      this.#draining = true;
      this.#flowControl();
      output.once('drain', () => {
        this.#draining = false;
        this.#pump();
      });
    }
  }

  readonly #write = (frame: unknown): void => this.#writeText(serialize(frame));

  async #run({ accepted, rejected }: Screened, batch: boolean): Promise<void> {
    const handled = accepted === undefined ? undefined : await this.#session.handle(accepted, this.#write);
    const reply = mergeReplies(handled, rejected, batch);
    if (reply !== undefined) {
      this.#writeText((await this.#codec.serializeReply(reply, this.#options.maxResponseBytes)).body);
    }
  }

  /**
   * Admission may wait on Redis, yet frames must reach the session in arrival order (a cancel after its request,
   * nothing after shutdown, §7.14, §13.1): each frame waits for the frames before it, and while none is waiting a
   * frame goes straight through, synchronously — so shutdown stops reading before the next line is dispatched.
   */
  #admitInOrder(value: unknown): Promise<void> {
    const guard = this.#options.admission;
    const applies = guard?.appliesTo(value) === true;
    const batch = Array.isArray(value);
    if (guard === undefined || (!applies && this.#waiting === 0)) {
      return this.#run({ accepted: value, rejected: [] }, batch);
    }
    const screened: Promise<Screened> = applies
      ? screen(value, (method) => guard.check('stdio', method))
      : Promise.resolve({ accepted: value, rejected: [] });
    this.#waiting++;
    const ready = Promise.all([this.#previous, screened]).then(([, result]) => result);
    this.#previous = ready.finally(() => this.#waiting--);
    return ready.then((result) => this.#run(result, batch));
  }

  #dispatch(text: string): void {
    const parsed = parseFrame(text);
    if (!parsed.ok) return this.#write(parsed.reply);
    const tracked = this.#admitInOrder(parsed.value).then(
      () => undefined,
      (error: unknown) => this.#options.log.error({ err: error }, 'stdio dispatch failed'),
    );
    this.#pending.add(tracked);
    void tracked.finally(() => {
      this.#pending.delete(tracked);
      this.#pump();
    });
    // A shutdown waiting its turn still ends reading now: nothing after it is processed (§13.1).
    if (isShutdown(parsed.value)) this.#stopReading();
  }

  readonly #onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    for (const event of this.#splitter.push(bytes)) {
      if (event.kind === 'line') this.#backlog.push(event.text);
      else this.#write(failure(null, RpcError.payloadTooLarge(refusalOf(event, this.#options))));
    }
    this.#pump();
  };

  async #drainAndClose(): Promise<void> {
    await this.#session.idle();
    await Promise.all(this.#pending);
    if (this.#dead) return this.#finish();
    this.#options.output.write('', () => this.#finish());
  }

  #stopReading(): void {
    if (!this.#accepting) return;
    this.#accepting = false;
    this.#backlog.length = 0;
    this.#options.input.off('data', this.#onData);
    this.#options.input.pause();
    // Let the line being dispatched (the shutdown itself) register before draining.
    setImmediate(() => void this.#drainAndClose());
  }
}
