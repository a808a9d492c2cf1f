import type { Socket } from 'node:net';
import { callerOfSocket } from './address-caller.js';

/**
 * Requests one client address may bring in by reading its connections in one turn of the event loop; past it, its
 * other connections stop reading until the next turn (see `AddressReads`).
 */
export const ADDRESS_READS_PER_TURN = 64;

/**
 * Reading in bounded slices per client address (§15.5, docs/architecture.md "Connections"). Node parses all that
 * one read of a socket brings (up to 64 KB) before any gate sees a request, and reads every socket with something
 * waiting in one turn: one address pipelining a thousand pings on each of 250 connections had Node parse ~125,000
 * requests in one turn (1.3-2.2 s) while every other client waited. Here, once an address's connections have brought
 * more than `ADDRESS_READS_PER_TURN` requests in a turn, its other connections are paused (the kernel keeps their
 * bytes and, once its buffers fill, the client's writes wait); each is resumed at the next turn. A turn thus reads
 * about one socket's worth of that address, whatever it opened. Connections Node itself paused (an answer the client
 * is not reading, a body not yet wanted) are left to Node.
 */
export class AddressReads {
  readonly #sockets = new Map<string, Set<Socket>>();
  readonly #read = new Map<string, number>();
  /** Addresses paused for the rest of this turn, with the connections paused here. */
  readonly #paused = new Map<string, Socket[]>();
  #scheduled = false;

  /** A connection opened: it reads while its address has not had its share of this turn. */
  watch(socket: Socket): void {
    const address = callerOfSocket(socket);
    let sockets = this.#sockets.get(address);
    if (sockets === undefined) this.#sockets.set(address, (sockets = new Set()));
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0 && this.#sockets.get(address) === sockets) this.#sockets.delete(address);
    });
    const paused = this.#paused.get(address);
    if (paused !== undefined) pause(socket, paused);
  }

  /** A request was read from `socket`; past its address's share, the address's connections stop reading. */
  read(socket: Socket): void {
    const address = callerOfSocket(socket);
    const read = (this.#read.get(address) ?? 0) + 1;
    this.#read.set(address, read);
    this.#schedule();
    if (read <= ADDRESS_READS_PER_TURN || this.#paused.has(address)) return;
    const paused: Socket[] = [];
    this.#paused.set(address, paused);
    for (const other of this.#sockets.get(address) ?? []) pause(other, paused);
  }

  /** At the next turn every count starts again and what was paused here reads again. */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#read.clear();
      for (const sockets of this.#paused.values()) for (const socket of sockets) socket.resume();
      this.#paused.clear();
    });
  }
}

/** Pauses `socket` unless it is closed or Node paused it already; those paused here are kept in `paused`. */
function pause(socket: Socket, paused: Socket[]): void {
  if (socket.destroyed || socket.isPaused()) return;
  socket.pause();
  paused.push(socket);
}
