import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Answers written but not yet taken by their clients, across every HTTP connection (§15.5). A client that asks for
 * large answers and never reads them makes the server hold those bytes until its idle timeout cuts it; this bounds
 * how much all such clients together can hold. A large answer that would take the total past `maxBytes` is not
 * written: its caller is told to retry later (-32011), and small answers (pings, errors) always go out.
 */
export class Outbox {
  readonly #sockets = new Set<Socket>();
  /** Answers not yet flushed to their connection: pipelined ones wait, whole, behind the answer before them. */
  readonly #responses = new Set<ServerResponse>();

  constructor(private readonly maxBytes: number) {}

  /** Follows the connections and answers of `server`. */
  track(server: Server): void {
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
    // Only an answer queued behind another on its connection has no socket yet: only those are followed (a listener
    // on every answer, this one's and the drain's, cost a ping about 6%). 'close' follows 'finish', or comes alone
    // when the connection dies.
    server.on('request', (_request: IncomingMessage, response: ServerResponse) => {
      if (response.socket !== null) return;
      this.#responses.add(response);
      response.on('close', () => this.#responses.delete(response));
    });
  }

  /** Bytes written to connections and not yet accepted by the network, and answers queued behind others. */
  get held(): number {
    let held = 0;
    for (const socket of this.#sockets) held += socket.writableLength;
    // An answer without its connection yet holds its bytes itself (one given its connection is counted above).
    for (const response of this.#responses) if (response.socket === null) held += response.writableLength;
    return held;
  }

  /** Whether an answer of `bytes` may be written now (always while nothing is held: one answer can always go). */
  admits(bytes: number): boolean {
    if (bytes <= SMALL_ANSWER_BYTES) return true;
    const held = this.held;
    return held === 0 || held + bytes <= this.maxBytes;
  }
}

/** Answers this small are always written: they cost less than refusing them. */
const SMALL_ANSWER_BYTES = 64 * 1024;
