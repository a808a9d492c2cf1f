import { approximateBytes, type ParsedFrame } from '../../protocol/frames.js';
import { inlineCodec, type EncodedReply, type FrameCodec } from '../../protocol/frame-codec.js';
import { WorkerChannel } from '../worker-thread.js';
import type { CodecReply, CodecRequest } from './codec-protocol.js';

/**
 * Frames from this many bytes up are parsed and serialised in the codec's worker thread. Below it the hop costs
 * more than it saves (a 256 KiB frame parses in about a millisecond); above it the event loop pays only for
 * copying values between threads, a fraction of what JSON costs.
 */
export const OFFLOAD_BYTES = 256 * 1024;

/** The server's FrameCodec (protocol/frame-codec.ts): small frames inline, large ones in a worker thread. */
export class WorkerCodec implements FrameCodec {
  #worker: WorkerChannel<CodecRequest, CodecReply> | undefined;

  parse(body: Buffer, caller = ''): ReturnType<FrameCodec['parse']> {
    if (body.byteLength < OFFLOAD_BYTES || this.#worker?.failed === true) return inlineCodec.parse(body);
    return this.#parseAway(body, caller);
  }

  serializeReply(reply: unknown, maxBytes: number, caller = ''): ReturnType<FrameCodec['serializeReply']> {
    if (this.#worker?.failed === true || approximateBytes(reply) < OFFLOAD_BYTES) {
      return inlineCodec.serializeReply(reply, maxBytes);
    }
    return this.#serializeAway(reply, maxBytes, caller);
  }

  async #parseAway(body: Buffer, caller: string): Promise<ParsedFrame> {
    // Handed over, not copied, when the body owns its memory (a large Buffer.concat does).
    const owns = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
    const transfer = owns && body.buffer instanceof ArrayBuffer ? [body.buffer] : [];
    const reply = await this.#channel().call({ op: 'parse', body }, transfer, undefined, caller);
    return reply.parsed!;
  }

  async #serializeAway(reply: unknown, maxBytes: number, caller: string): Promise<EncodedReply> {
    const answer = await this.#channel().call({ op: 'serialize', reply, maxBytes }, [], undefined, caller);
    const { body, bytes } = answer.serialized!;
    return { body: Buffer.from(body.buffer, body.byteOffset, body.byteLength), bytes };
  }

  async close(): Promise<void> {
    await this.#worker?.terminate();
  }

  /** The worker, started at the first large frame (once it has failed, frames are handled inline). */
  #channel(): WorkerChannel<CodecRequest, CodecReply> {
    return (this.#worker ??= new WorkerChannel<CodecRequest, CodecReply>(import.meta.url, './codec-worker'));
  }
}
