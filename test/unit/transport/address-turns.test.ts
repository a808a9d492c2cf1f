import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ADDRESS_STARTS_PER_TURN, pipelineGate } from '../../../src/transport/connections.js';
import { burstAtOnce, turnCounter } from '../../helpers/bursts.js';
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
    const turns = turnCounter();
    const starts: [number, string][] = [];
    server = createServer(
      pipelineGate((request, response) => {
        starts.push([turns.turn, request.socket.remoteAddress ?? '']);
        setImmediate(() => response.end('{}'));
      }),
    );
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const connections = ADDRESS_STARTS_PER_TURN * 3;
    const client = await burstAtOnce(server, CLIENT, [String(connections)], connections + 1);
    await untilLogged(client, new RegExp(`(answered[^]*){${connections + 1}}`));
    turns.stop();
    client.child.kill();
    const perTurn = new Map<string, number>();
    for (const [at, address] of starts) perTurn.set(`${at} ${address}`, (perTurn.get(`${at} ${address}`) ?? 0) + 1);
    expect(Math.max(...perTurn.values())).toBe(ADDRESS_STARTS_PER_TURN);
    const first = starts[0]![0];
    expect(starts.find(([, address]) => address === '127.0.0.2')?.[0]).toBe(first);
    expect(starts.filter(([, address]) => address === '127.0.0.1').length).toBe(connections);
  });
});
