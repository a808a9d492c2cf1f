import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ADDRESS_STARTS_PER_TURN, pipelineGate } from '../../../src/transport/connections.js';
import { untilLogged } from '../../helpers/children.js';

/**
 * A client in a process of its own: `connections` connections from 127.0.0.1 and one from 127.0.0.2 (Linux routes
 * all of 127.0.0.0/8 to loopback), each sending one request once told to on stdin, the 127.0.0.1 ones first; it
 * creates `written` once every request is handed to the kernel, and writes each answer's address to stderr.
 */
const CLIENT = `
const { connect } = require('node:net');
const { writeFileSync } = require('node:fs');
const [port, connections, written] = process.argv.slice(1);
const open = (localAddress) => new Promise((resolve) => {
  const socket = connect({ host: '127.0.0.1', port: Number(port), localAddress }, () => resolve(socket));
  socket.on('data', (chunk) => { if (chunk.toString().includes('HTTP/1.1 200')) console.error('answered ' + localAddress); });
});
(async () => {
  const sockets = [];
  for (let i = 0; i < Number(connections); i++) sockets.push(await open('127.0.0.1'));
  sockets.push(await open('127.0.0.2'));
  console.error('open');
  process.stdin.once('data', async () => {
    const request = 'POST / HTTP/1.1\\r\\nhost: x\\r\\ncontent-length: 2\\r\\n\\r\\n{}';
    await Promise.all(sockets.map((socket) => new Promise((resolve) => socket.write(request, resolve))));
    writeFileSync(written, '');
  });
})();
`;

describe('§15.5 each client address starts its share of requests a turn', () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  it(`a client whose ${ADDRESS_STARTS_PER_TURN * 3} requests arrive at once starts ${ADDRESS_STARTS_PER_TURN} a turn; another address starts in the first`, async () => {
    // Turns of the event loop, counted by an immediate that queues the next.
    let turn = 0;
    let counting = true;
    const count = () => counting && setImmediate(() => (turn++, count()));
    count();
    const starts: [number, string][] = [];
    server = createServer(
      pipelineGate((request, response) => {
        starts.push([turn, request.socket.remoteAddress ?? '']);
        setImmediate(() => response.end('{}'));
      }),
    );
    let accepted = 0;
    server.on('connection', () => accepted++);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const connections = ADDRESS_STARTS_PER_TURN * 3;
    const written = join(mkdtempSync(join(tmpdir(), 'rcp-turns-')), 'written');
    const port = String((server.address() as AddressInfo).port);
    const child = spawn(process.execPath, ['-e', CLIENT, port, String(connections), written]);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const client = { child, stderr: () => stderr };
    await untilLogged(client, /open/);
    while (accepted < connections + 1) await new Promise((resolve) => setImmediate(resolve));
    // Every request arrives while this event loop is busy, so one poll finds them all.
    child.stdin.write('go\n');
    while (!existsSync(written)) {
      // busy on purpose: the requests queue in the kernel meanwhile
    }
    await untilLogged(client, new RegExp(`(answered[^]*){${connections + 1}}`));
    counting = false;
    child.kill();
    const perTurn = new Map<string, number>();
    for (const [at, address] of starts) perTurn.set(`${at} ${address}`, (perTurn.get(`${at} ${address}`) ?? 0) + 1);
    expect(Math.max(...perTurn.values())).toBe(ADDRESS_STARTS_PER_TURN);
    const first = starts[0]![0];
    expect(starts.find(([, address]) => address === '127.0.0.2')?.[0]).toBe(first);
    expect(starts.filter(([, address]) => address === '127.0.0.1').length).toBe(connections);
  });
});
