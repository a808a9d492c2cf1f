import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How long an ended connection may stay idle, waiting for its client to hang up, during a drain. */
const LINGER_MS = 2000;

/** Turns of the event loop a drain takes at most to accept connections already completed (the listen backlog). */
const ACCEPT_TURNS = 512;

/** How often a drain looks for connections whose last answer has gone out. */
const SWEEP_MS = 50;

/**
 * Graceful HTTP close for one listener: stop accepting, let every answer in progress go out, end each connection
 * once nothing is in progress on it, and cut whatever is still open at the request deadline.
 *
 * Every request a client sent before the signal is answered, the last answer on each connection saying `Connection:
 * close`. Connections the kernel has completed but Node has not yet accepted are reset when the listener closes, so
 * it closes only once they are accepted. A connection with nothing in progress is ended only once a whole sweep has
 * passed with no byte read from it: a request may be waiting in the socket, unread, when the signal comes (a
 * connection that has sent nothing yet, or a keep-alive one between requests). A client still sending a request
 * `receivingMs` into the drain is cut.
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
  /** Bytes read from each connection as of the sweep that last found nothing in progress on it. */
  readonly #quiet = new Map<Socket, number>();
  #draining = false;
  /** Connections accepted so far. */
  #accepted = 0;

  constructor(
    private readonly server: Server,
    /** How long into a drain a client may still be sending its request (`http.headersTimeoutMs`; see `#cutReceiving`). */
    private readonly receivingMs: number,
  ) {
    server.on('connection', (socket: Socket) => {
      this.#accepted++;
      this.#last.set(socket, undefined);
      socket.once('close', () => {
        this.#last.delete(socket);
        this.#quiet.delete(socket);
      });
    });
    // No listener on each answer: this one's and the outbox's together cost a ping about 6% (npm run bench -- http).
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      const previous = this.#last.get(request.socket);
      if (this.#last.has(request.socket)) this.#last.set(request.socket, response);
      if (this.#draining) closesAfter(response, previous);
    });
    server.closeIdleConnections = () => this.#endIdle();
  }

  /** Resolves once every connection has closed: ended as its answers go out, cut at `deadlineMs` if still open. */
  async close(close: () => Promise<void>, deadlineMs: number): Promise<void> {
    this.#draining = true;
    await this.#acceptWaiting();
    const sweep = setInterval(() => this.#endIdle(), SWEEP_MS);
    const cut = setTimeout(() => this.server.closeAllConnections(), deadlineMs);
    const receiving = setTimeout(() => this.#cutReceiving(), Math.min(this.receivingMs, deadlineMs));
    try {
      await close();
    } finally {
      clearInterval(sweep);
      clearTimeout(cut);
      clearTimeout(receiving);
    }
  }

  /**
   * Accepts the connections the kernel has completed before the listener closes: a poll of the event loop accepts
   * one at a time here, so turns are taken until one passes with none accepted (at most `ACCEPT_TURNS`; a client
   * connecting without end cannot hold the close).
   */
  async #acceptWaiting(): Promise<void> {
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    for (let turns = 0; turns < ACCEPT_TURNS; turns++) {
      const accepted = this.#accepted;
      // Two immediates: the second runs after a poll of the event loop, where connections are accepted.
      await turn();
      await turn();
      if (this.#accepted === accepted) return;
    }
  }

  /**
   * Cuts every connection whose client is still sending (a request's headers or body) or has sent nothing: Node stops
   * enforcing its header and body timeouts once the listener closes, and a body sent a byte at a time held the drain
   * until the request deadline, past `docker stop`'s grace (the index unsaved).
   */
  #cutReceiving(): void {
    for (const [socket, last] of this.#last) {
      if (last === undefined || last.req.complete === false || last.writableFinished) socket.destroy();
    }
  }

  /**
   * Ends every connection with no answer in progress and no byte read since the sweep before; one whose client does
   * not hang up soon after is cut.
   */
  #endIdle(): void {
    for (const [socket, last] of this.#last) {
      // `writableFinished`: the answer's last byte has left Node for the kernel (a cut connection is closing anyway).
      if (last?.writableFinished === false || socket.writableEnded) {
        this.#quiet.delete(socket);
        continue;
      }
      // The first request still arriving (its first bytes read, not yet whole): left to `#cutReceiving`.
      if (last === undefined && socket.bytesRead > 0) continue;
      if (this.#quiet.get(socket) !== socket.bytesRead) {
        this.#quiet.set(socket, socket.bytesRead);
        continue;
      }
      socket.end();
      socket.setTimeout(LINGER_MS, () => socket.destroy());
    }
  }
}

/**
 * While draining, the connection closes after the last request read from it: `Connection: close` goes on the
 * newest answer not yet begun, and comes off the one before it, if that one has not begun either. Node closes the
 * connection after an answer that says so, and drops whatever was pipelined behind it: put on every answer, a client
 * that had sent 300 requests in one write got one answer. (The front listener, transport/http.ts, ran first.)
 */
function closesAfter(response: ServerResponse, previous: ServerResponse | undefined): void {
  if (previous !== undefined && !previous.headersSent) previous.removeHeader('connection');
  if (!response.headersSent) response.setHeader('connection', 'close');
}
