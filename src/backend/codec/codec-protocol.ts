import type { ParsedFrame, SerializedReply } from '../../protocol/frames.js';

/** Messages between the frame codec and its worker thread. */
export type CodecRequest = { op: 'parse'; body: Uint8Array } | { op: 'serialize'; reply: unknown; maxBytes: number };

export type CodecReply =
  { ok: true; parsed?: ParsedFrame; serialized?: SerializedReply } | { ok: false; error: string };
