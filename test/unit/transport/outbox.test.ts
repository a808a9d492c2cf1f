import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Outbox } from '../../../src/transport/outbox.js';

/** §15.5 the outbox counts answer bytes written to real sockets that their clients have not read. */
let server: Server | undefined;
let client: Socket | undefined;
afterEach(async () => {
  client?.destroy();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

describe('Outbox', () => {
  it('holds what a client that stops reading has not taken, refuses large answers past its bound, never small ones', async () => {
    const outbox = new Outbox(16 * 1024 * 1024);
    const written = new Promise<void>((resolve) => {
      server = createServer((_request, response) => {
        // More than any kernel keeps for one connection (receive plus send buffers): the rest stays with the server.
        response.end(Buffer.alloc(128 * 1024 * 1024, 'x'));
        setTimeout(resolve, 200);
      });
    });
    outbox.track(server!);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server!.address() as { port: number };
    client = connect(port, '127.0.0.1', () => client!.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    client.pause();
    await written;
    expect(outbox.held).toBeGreaterThan(16 * 1024 * 1024);
    expect(outbox.admits(1024 * 1024)).toBe(false);
    expect(outbox.admits(1024)).toBe(true);
    client.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(outbox.held).toBe(0);
    expect(outbox.admits(1024 * 1024)).toBe(true);
  });

  it('counts answers to pipelined requests queued behind an unread one (they are not on the socket yet)', async () => {
    const outbox = new Outbox(1024 * 1024 * 1024);
    let answered = 0;
    const written = new Promise<void>((resolve) => {
      server = createServer((_request, response) => {
        response.end(Buffer.alloc(8 * 1024 * 1024, 'x'));
        if (++answered === 3) setTimeout(resolve, 200);
      });
    });
    outbox.track(server!);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server!.address() as { port: number };
    const request = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';
    client = connect(port, '127.0.0.1', () => client!.write(request.repeat(3)));
    client.pause();
    await written;
    // The first answer is on the socket (less what the kernel took); the other two wait whole behind it.
    expect(outbox.held).toBeGreaterThan(16 * 1024 * 1024);
  });
});
