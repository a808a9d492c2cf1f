import { parseFrame, serializeReply, type ParsedFrame } from './frames.js';

/**
 * Turning frames into values and answers into text (§4, §15.5). Parsing or serialising a frame of megabytes takes
 * tens of milliseconds in one piece, so a server's codec does large ones off the event loop (platform/codec); the
 * transports only see this interface.
 */
export interface FrameCodec {
  /**
   * The frame in `body` (UTF-8 JSON); `body` may be handed to another thread: the caller must not read it after.
   * Large frames of different callers take turns (§15.5). A promise only for a frame handled away from the calling
   * thread: a small one is parsed at once, without a turn of the microtask queue per request.
   */
  parse(body: Buffer, caller?: string): ParsedFrame | Promise<ParsedFrame>;
  /** The answer as one JSON text of at most `maxBytes` (serializeReply), as text or as its UTF-8 bytes; as `parse`. */
  serializeReply(reply: unknown, maxBytes: number, caller?: string): EncodedReply | Promise<EncodedReply>;
}

/**
 * A serialised answer: text, or (from a worker) already its UTF-8 bytes — encoding 15 MB of text to bytes held the
 * event loop 46 ms when the transport did it.
 */
export interface EncodedReply {
  readonly body: string | Buffer;
  readonly bytes: number;
}

/** Everything on the calling thread: for in-process use and tests, and for the small frames of any codec. */
export const inlineCodec: FrameCodec = {
  parse: (body) => parseFrame(body.toString('utf8')),
  serializeReply: (reply, maxBytes) => {
    const { text, bytes } = serializeReply(reply, maxBytes);
    return { body: text, bytes };
  },
};
