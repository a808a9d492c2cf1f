import type { ServerResponse } from 'node:http';
import { RpcError } from '../protocol/errors.js';
import type { EncodedReply, FrameCodec } from '../protocol/frame-codec.js';
import type { Inbound } from '../protocol/tracing.js';
import { serialize } from '../protocol/frames.js';
import { failure } from '../protocol/messages.js';
import type { Reply, Session } from '../protocol/session.js';
import { sendJson } from './json-answer.js';
import type { Outbox } from './outbox.js';

/** What writing an answer needs: the codec, the answer cap, the outbox, and where a failed stream is reported. */
export interface AnswerOptions {
  /** Bytes; a larger answer is -32013 per member (§15.5). */
  readonly maxResponseBytes: number;
  readonly codec: FrameCodec;
  /** Answers not yet read by their clients, across connections: a large one past its bound is -32011. */
  readonly outbox?: Outbox | undefined;
  readonly log: { error(details: object, message: string): void };
}

/**
 * §5.2: the answer as HTTP 200 JSON, or 204 when there is nothing to answer (notifications only). Sent at once when
 * the answer was serialised here (a promise only while a large one is serialised in the codec's worker).
 */
export function sendReplies(
  response: ServerResponse,
  replies: Reply | undefined,
  caller: string,
  options: AnswerOptions,
): Promise<void> | undefined {
  if (replies === undefined) return void response.writeHead(204).end();
  const send = (body: string | Buffer) => sendJson(response, body);
  const body = outgoing(replies, options, caller);
  return body instanceof Promise ? body.then(send) : void send(body);
}

/** The answer's text, capped in size; -32011 for each member while unread answers fill the outbox (§15.5). */
function outgoing(replies: Reply, options: AnswerOptions, caller: string): string | Buffer | Promise<string | Buffer> {
  const admit = ({ body, bytes }: EncodedReply): string | Buffer => {
    if (options.outbox === undefined || options.outbox.admits(bytes)) return body;
    const busy = RpcError.rateLimited(1000, `answers of ${options.outbox.held} bytes wait for clients to read them`);
    return serialize(Array.isArray(replies) ? replies.map((r) => failure(r.id, busy)) : failure(replies.id, busy));
  };
  const encoding = options.codec.serializeReply(replies, options.maxResponseBytes, caller);
  return encoding instanceof Promise ? encoding.then(admit) : admit(encoding);
}

/**
 * §5.2 SSE: `frame` handled in `session`, its progress frames sent as they happen, then exactly one final frame, then
 * the stream ends.
 */
export async function stream(
  raw: ServerResponse,
  caller: string,
  options: AnswerOptions,
  {
    session,
    frame,
    hangUp,
    inbound,
  }: { session: Session; frame: unknown; hangUp: AbortSignal | undefined; inbound: Inbound },
): Promise<void> {
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  const sendText = (text: string | Buffer): void => {
    if (!raw.writable) return;
    if (typeof text === 'string') return void raw.write(`data: ${text}\n\n`);
    raw.write('data: ');
    raw.write(text);
    raw.write('\n\n');
  };
  try {
    const final = await session.handle(frame, (notification) => sendText(serialize(notification)), hangUp, inbound);
    if (final !== undefined) sendText(await outgoing(final, options, caller));
  } catch (error) {
    options.log.error({ err: error }, 'SSE dispatch failed');
  } finally {
    raw.end();
  }
}
