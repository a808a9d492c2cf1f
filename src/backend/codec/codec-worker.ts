/**
 * The frame codec's worker thread: parses large request bodies and serialises large answers, so that the tens of
 * milliseconds JSON takes over megabytes are not spent on the event loop that answers every client (DESIGN §5b).
 */
import { parentPort } from 'node:worker_threads';
import { parseFrame, serializeReply } from '../../protocol/frames.js';
import type { CodecReply, CodecRequest } from './codec-protocol.js';

const port = parentPort!;

port.on('message', (request: CodecRequest) => {
  let reply: CodecReply;
  try {
    reply =
      request.op === 'parse'
        ? {
            ok: true,
            parsed: parseFrame(
              Buffer.from(request.body.buffer, request.body.byteOffset, request.body.byteLength).toString('utf8'),
            ),
          }
        : { ok: true, serialized: serializeReply(request.reply, request.maxBytes) };
  } catch (error) {
    reply = { ok: false, error: (error as Error).message };
  }
  port.postMessage(reply);
});
