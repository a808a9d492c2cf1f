import type { ParsedFrame } from '../../protocol/frames.js';

/** Messages between the frame codec and its worker thread. */
export type CodecRequest = { op: 'parse'; body: Uint8Array } | { op: 'serialize'; reply: unknown; maxBytes: number };

export type CodecReply =
  { ok: true; parsed?: ParsedFrame; serialized?: { body: Uint8Array; bytes: number } } | { ok: false; error: string };
