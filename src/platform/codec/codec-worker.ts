/**
 * The frame codec's worker thread: parses large request bodies and serialises large answers, so that the tens of
 * milliseconds JSON takes over megabytes are not spent on the event loop that answers every client
 * (docs/architecture.md §10).
 */
import { parentPort } from 'node:worker_threads';
import { parseFrame, serializeReply } from '../../protocol/frames.js';
import type { CodecReply, CodecRequest } from './codec-protocol.js';

const port = parentPort!;

port.on('message', (request: CodecRequest) => {
  let reply: CodecReply;
  const transfer: ArrayBuffer[] = [];
  try {
    if (request.op === 'parse') {
      const { buffer, byteOffset, byteLength } = request.body;
      reply = { ok: true, parsed: parseFrame(Buffer.from(buffer, byteOffset, byteLength).toString('utf8')) };
    } else {
      // Encoded here, and handed over rather than copied: the transport writes the bytes as they are.
      const { text, bytes } = serializeReply(request.reply, request.maxBytes);
      const body = new Uint8Array(bytes);
      Buffer.from(body.buffer).write(text, 'utf8');
      reply = { ok: true, serialized: { body, bytes } };
      transfer.push(body.buffer);
    }
  } catch (error) {
    reply = { ok: false, error: (error as Error).message };
  }
  port.postMessage(reply, transfer);
});
