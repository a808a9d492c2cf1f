import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How long an ended connection may stay idle, waiting for its client to hang up, during a drain. */
const LINGER_MS = 2000;

/** How often a drain looks for connections whose last answer has gone out. */
const SWEEP_MS = 50;

/**
 * Graceful HTTP close for one listener: stop accepting, let every answer in progress go out, end each connection
 * once nothing is in progress on it, and cut whatever is still open at the request deadline.
 *
 * Ended, never destroyed, while an answer may still be on its way: the connection closes once its client has read the
 * last answer and hung up, so the process does not exit while that answer's bytes wait in a buffer (a container's
 * network goes with its process, and bytes left there are lost). Node's own idle sweep, which `server.close()` and
 * Fastify's close run, counts a connection idle as soon as its answer is *handed* to the socket, and destroyed a
 * 2.7 MB answer still in Node's buffer; this listener's sweep ends such a connection instead, once its answer has
 * gone out.
 */
export class Drain {
  /** Every open connection, with the last answer begun on it (answers go out in order: when it has, all have). */
  readonly #last = new Map<Socket, ServerResponse | undefined>();

  constructor(private readonly server: Server) {
    server.on('connection', (socket: Socket) => {
      this.#last.set(socket, undefined);
      socket.once('close', () => this.#last.delete(socket));
    });
    // No listener on each answer: this one's and the outbox's together cost a ping about 6% (npm run bench -- http).
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      if (this.#last.has(request.socket)) this.#last.set(request.socket, response);
    });
    server.closeIdleConnections = () => this.#endIdle();
  }

  /** Resolves once every connection has closed: ended as its answers go out, cut at `deadlineMs` if still open. */
  async close(close: () => Promise<void>, deadlineMs: number): Promise<void> {
    const sweep = setInterval(() => this.#endIdle(), SWEEP_MS);
    const cut = setTimeout(() => this.server.closeAllConnections(), deadlineMs);
    try {
      await close();
    } finally {
      clearInterval(sweep);
      clearTimeout(cut);
    }
  }

  /** Ends every connection with no answer in progress; one whose client does not hang up soon after is cut. */
  #endIdle(): void {
    for (const [socket, last] of this.#last) {
      // `writableFinished`: the answer's last byte has left Node for the kernel (a cut connection is closing anyway).
      if (last?.writableFinished === false || socket.writableEnded) continue;
      socket.end();
      socket.setTimeout(LINGER_MS, () => socket.destroy());
    }
  }
}
