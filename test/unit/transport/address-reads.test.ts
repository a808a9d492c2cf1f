import type { Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ADDRESS_READS_PER_TURN } from '../../../src/transport/address-reads.js';
import { serverOptions } from '../../../src/transport/connections.js';
import { burstAtOnce, turnCounter } from '../../helpers/bursts.js';
import { untilLogged } from '../../helpers/children.js';

/**
 * A client in a process of its own: `connections` connections from 127.0.0.1, each pipelining `pipelined` requests
 * in one write, and one connection from 127.0.0.2 sending one, once told to on stdin; it creates `written` once every
 * write is handed to the kernel, and logs "done" once every answer came.
 */
const CLIENT = `
const { connect } = require('node:net');
const { writeFileSync } = require('node:fs');
const [port, connections, pipelined, written] = process.argv.slice(1).map((arg, i) => i === 3 ? arg : Number(arg));
const request = 'POST / HTTP/1.1\\r\\nhost: x\\r\\ncontent-length: 2\\r\\n\\r\\n{}';
let waiting = connections * pipelined + 1;
const open = (localAddress) => new Promise((resolve) => {
  const socket = connect({ host: '127.0.0.1', port, localAddress }, () => resolve(socket));
  let tail = '';
  socket.on('data', (chunk) => {
    const text = tail + chunk.toString('latin1');
    waiting -= text.split('HTTP/1.1 ').length - 1;
    tail = text.slice(-8);
    if (waiting === 0) console.error('done');
  });
});
(async () => {
  const sockets = [];
  for (let i = 0; i < connections; i++) sockets.push([await open('127.0.0.1'), request.repeat(pipelined)]);
  sockets.push([await open('127.0.0.2'), request]);
  console.error('open');
  process.stdin.once('data', async () => {
    await Promise.all(sockets.map(([socket, text]) => new Promise((resolve) => socket.write(text, resolve))));
    writeFileSync(written, '');
  });
})();
`;

const LIMITS = {
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  keepAliveTimeoutMs: 30_000,
  idleTimeoutMs: 60_000,
  maxConnections: 1024,
  maxConnectionsPerAddress: 256,
};

describe('§15.5 one client address reads its share of requests a turn', () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  it('32 connections of one address pipelining 300 requests each are not all parsed in one turn; another address is read in the first', async () => {
    const turns = turnCounter();
    server = serverOptions(LIMITS, 30_000).serverFactory((_request, response) => response.end('{}'));
    const reads: [number, string][] = [];
    server.on('request', (request) => reads.push([turns.turn, request.socket.remoteAddress ?? '']));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const [connections, pipelined] = [32, 300];
    const client = await burstAtOnce(server, CLIENT, [String(connections), String(pipelined)], connections + 1);
    await untilLogged(client, /done/);
    turns.stop();
    client.child.kill();
    const perTurn = new Map<number, number>();
    for (const [at, address] of reads) if (address === '127.0.0.1') perTurn.set(at, (perTurn.get(at) ?? 0) + 1);
    // Past its share an address reads no further connection that turn; the one read that crossed it is parsed whole.
    expect(Math.max(...perTurn.values())).toBeLessThan(ADDRESS_READS_PER_TURN + pipelined);
    expect(reads.filter(([, address]) => address === '127.0.0.1').length).toBe(connections * pipelined);
    expect(reads.find(([, address]) => address === '127.0.0.2')?.[0]).toBe(reads[0]![0]);
  });
});
