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
  /** Every open connection, with how many answers are in progress on it. */
  readonly #answering = new Map<Socket, number>();

  constructor(private readonly server: Server) {
    server.on('connection', (socket: Socket) => {
      this.#answering.set(socket, 0);
      socket.once('close', () => this.#answering.delete(socket));
    });
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      const socket = request.socket;
      this.#answering.set(socket, (this.#answering.get(socket) ?? 0) + 1);
      // 'close' follows 'finish', which comes once the last byte has left Node for the kernel (or the socket died).
      response.once('close', () => {
        const answering = this.#answering.get(socket);
        if (answering !== undefined) this.#answering.set(socket, answering - 1);
      });
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
    for (const [socket, answering] of this.#answering) {
      if (answering > 0 || socket.writableEnded) continue;
      socket.end();
      socket.setTimeout(LINGER_MS, () => socket.destroy());
    }
  }
}
