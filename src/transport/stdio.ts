import type { Readable, Writable } from 'node:stream';
import { RpcError } from '../protocol/errors.js';
import { parseFrame, serialize } from '../protocol/frames.js';
import { failure, isJsonObject } from '../protocol/messages.js';
import { LineSplitter } from '../protocol/ndjson.js';
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
  const { input, output, log } = options;
  const splitter = new LineSplitter(options.maxLineBytes);
  const pending = new Set<Promise<void>>();
  let accepting = true;
  let dead = false;
  const session = options.createSession({ onShutdown: () => stopReading() });

  let draining = false;
  const write = (frame: unknown): void => {
    if (dead) return;
    // Backpressure: while the reader is slow, stop taking new requests rather than buffer without bound.
    if (!output.write(`${serialize(frame)}\n`) && !draining) {
      draining = true;
      input.pause();
      output.once('drain', () => {
        draining = false;
        if (accepting) input.resume();
      });
    }
  };

  const admission = options.admission;
  const run = async ({ accepted, rejected }: Screened): Promise<void> => {
    const handled = accepted === undefined ? undefined : await session.handle(accepted, write);
    const reply = mergeReplies(handled, rejected);
    if (reply !== undefined) write(reply);
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

  const dispatch = (text: string): void => {
    const parsed = parseFrame(text);
    if (!parsed.ok) return write(parsed.reply);
    const work = admitInOrder(parsed.value);
    const tracked = work.then(
      () => undefined,
      (error: unknown) => log.error({ err: error }, 'stdio dispatch failed'),
    );
    pending.add(tracked);
    void tracked.finally(() => pending.delete(tracked));
    // A shutdown waiting its turn still ends reading now: nothing after it is processed (§13.1).
    if (isShutdown(parsed.value)) stopReading();
  };

  const onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    for (const event of splitter.push(bytes)) {
      if (!accepting) return;
      if (event.kind === 'line') dispatch(event.text);
      else
        write(
          failure(null, RpcError.payloadTooLarge(`frame of ${event.bytes}+ bytes exceeds ${options.maxLineBytes}`)),
        );
    }
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
    input.off('data', onData);
    input.pause();
    // Let the line being dispatched (the shutdown itself) register before draining.
    setImmediate(() => void drainAndClose());
  }

  input.on('data', onData);
  input.once('end', () => {
    if (accepting) for (const event of splitter.end()) if (event.kind === 'line') dispatch(event.text);
    stopReading();
  });
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
