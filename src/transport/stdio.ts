import type { Readable, Writable } from 'node:stream';
import { RpcError } from '../protocol/errors.js';
import { inlineCodec, type FrameCodec } from '../protocol/frame-codec.js';
import { parseFrame, serialize } from '../protocol/frames.js';
import { failure, isJsonObject } from '../protocol/messages.js';
import { LineSplitter, type LineEvent } from '../protocol/ndjson.js';
import { mergeReplies, screen, type Screened } from '../protocol/screen.js';
import type { Session, SessionOptions } from '../protocol/session.js';
import type { Admission } from './admission.js';
import type { Logger } from './logger.js';

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
 * §5.1 stdio: NDJSON over streams passed in (DESIGN §8.1). Requests are handled concurrently — a line is
 * never awaited before the next is read — and answers go out in one ordered stream as they complete.
 * stdout carries protocol frames only. EOF and `shutdown` stop reading, drain in-flight requests, then close.
 */
export function serveStdio(options: StdioOptions): StdioConnection {
  const { input, output, log, maxInFlight } = options;
  const splitter = new LineSplitter(options.maxLineBytes, options.maxFrameValues);
  const pending = new Set<Promise<void>>();
  /** Lines read but not yet dispatched: at most one chunk's worth, since reading pauses while any wait. */
  const backlog: string[] = [];
  let accepting = true;
  let inputEnded = false;
  let dead = false;
  let draining = false;
  const session = options.createSession({ onShutdown: () => stopReading() });

  // Read only while there is room for more work and the reader keeps up with the answers: a client that pipelines
  // thousands of requests, or stops reading, holds at most `maxInFlight` requests and their answers in memory.
  const flowControl = (): void => {
    if (!accepting || inputEnded) return;
    if (draining || backlog.length > 0 || pending.size >= maxInFlight) input.pause();
    else input.resume();
  };
  const pump = (): void => {
    while (accepting && backlog.length > 0 && pending.size < maxInFlight) dispatch(backlog.shift()!);
    if (inputEnded && backlog.length === 0) stopReading();
    flowControl();
  };

  const writeText = (text: string): void => {
    if (dead) return;
    if (!output.write(`${text}\n`) && !draining) {
      draining = true;
      flowControl();
      output.once('drain', () => {
        draining = false;
        pump();
      });
    }
  };
  const write = (frame: unknown): void => writeText(serialize(frame));

  const admission = options.admission;
  const codec = options.codec ?? inlineCodec;
  const run = async ({ accepted, rejected }: Screened): Promise<void> => {
    const handled = accepted === undefined ? undefined : await session.handle(accepted, write);
    const reply = mergeReplies(handled, rejected);
    if (reply !== undefined) writeText((await codec.serializeReply(reply, options.maxResponseBytes)).text);
  };

  // Admission may wait on Redis, yet frames must reach the session in arrival order (a cancel after its request,
  // nothing after shutdown, §7.14, §13.1): each frame waits for the frames before it, and while none is waiting a
  // frame goes straight through, synchronously — so shutdown stops reading before the next line is dispatched.
  let previous: Promise<unknown> = Promise.resolve();
  let waiting = 0;
  const admitInOrder = (value: unknown): Promise<void> => {
    const guard = admission;
    const applies = guard?.appliesTo(value) === true;
    if (guard === undefined || (!applies && waiting === 0)) return run({ accepted: value, rejected: [] });
    const screened: Promise<Screened> = applies
      ? screen(value, (method) => guard.check('stdio', method))
      : Promise.resolve({ accepted: value, rejected: [] });
    waiting++;
    const ready = Promise.all([previous, screened]).then(([, result]) => result);
    previous = ready.finally(() => waiting--);
    return ready.then(run);
  };

  function dispatch(text: string): void {
    const parsed = parseFrame(text);
    if (!parsed.ok) return write(parsed.reply);
    const work = admitInOrder(parsed.value);
    const tracked = work.then(
      () => undefined,
      (error: unknown) => log.error({ err: error }, 'stdio dispatch failed'),
    );
    pending.add(tracked);
    void tracked.finally(() => {
      pending.delete(tracked);
      pump();
    });
    // A shutdown waiting its turn still ends reading now: nothing after it is processed (§13.1).
    if (isShutdown(parsed.value)) stopReading();
  }

  const onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    for (const event of splitter.push(bytes)) {
      if (event.kind === 'line') backlog.push(event.text);
      else write(failure(null, RpcError.payloadTooLarge(refusal(event, options))));
    }
    pump();
  };

  let finish: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (finish = resolve));

  const drainAndClose = async (): Promise<void> => {
    await session.idle();
    await Promise.all(pending);
    if (dead) return finish();
    output.write('', () => finish());
  };

  function stopReading(): void {
    if (!accepting) return;
    accepting = false;
    backlog.length = 0;
    input.off('data', onData);
    input.pause();
    // Let the line being dispatched (the shutdown itself) register before draining.
    setImmediate(() => void drainAndClose());
  }

  input.on('data', onData);
  const ended = (): void => {
    if (inputEnded) return;
    for (const event of splitter.end()) if (event.kind === 'line') backlog.push(event.text);
    inputEnded = true;
    pump();
  };
  input.once('end', ended);
  // Destroyed rather than ended (the server's own SIGTERM, or a fatal start-up finding): no 'end' comes.
  input.once('close', ended);
  input.once('error', (error) => {
    log.warn({ err: error }, 'stdin failed');
    stopReading();
  });
  output.on('error', (error) => {
    // §13.1 transport death: in-flight requests are abandoned, not answered.
    log.warn({ err: error }, 'stdout closed');
    dead = true;
    session.abortAll(RpcError.cancelled('transport closed'));
    stopReading();
  });
  return { closed };
}

/** Why a frame was discarded unparsed. */
function refusal(event: Exclude<LineEvent, { kind: 'line' }>, options: StdioOptions): string {
  return event.kind === 'oversized'
    ? `frame of ${event.bytes}+ bytes exceeds ${options.maxLineBytes}`
    : `frame of more than ${options.maxFrameValues} JSON values (${event.tokens}+)`;
}
