import type { IncomingMessage, Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ADDRESS_READS_PER_TURN } from '../../../src/transport/address-reads.js';
import { serverOptions } from '../../../src/transport/connections.js';
import { burstAtOnce, turnCounter } from '../../helpers/bursts.js';
import { untilLogged } from '../../helpers/children.js';

/** What the flooding connections pipeline: a request the RCP routes serve, and two that Node itself would answer. */
const REQUESTS = {
  valid: 'POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}',
  'without Host': 'GET / HTTP/1.1\r\n\r\n',
  'with an unknown Expect': 'GET / HTTP/1.1\r\nhost: x\r\nexpect: foo\r\n\r\n',
};

/**
 * A client in a process of its own: `connections` connections from 127.0.0.1, each pipelining `pipelined` copies of
 * `request` in one write, and one connection from 127.0.0.2 sending a valid one, once told to on stdin; it creates
 * `written` once every write is handed to the kernel, and logs "done" once each connection has had all its answers
 * or was closed.
 */
const CLIENT = `
const { connect } = require('node:net');
const { writeFileSync } = require('node:fs');
const [port, connections, pipelined, request, valid, written] = process.argv.slice(1);
let open = Number(connections) + 1;
const finished = () => { if (--open === 0) console.error('done'); };
const connection = (localAddress, expected) => new Promise((resolve) => {
  const socket = connect({ host: '127.0.0.1', port: Number(port), localAddress }, () => resolve(socket));
  let answers = 0;
  let tail = '';
  socket.on('data', (chunk) => {
    const text = tail + chunk.toString('latin1');
    answers += text.split('HTTP/1.1 ').length - 1;
    tail = text.slice(-8);
    if (answers === expected) socket.destroy();
  });
  socket.once('close', finished);
});
(async () => {
  const sockets = [];
  for (let i = 0; i < Number(connections); i++)
    sockets.push([await connection('127.0.0.1', Number(pipelined)), request.repeat(Number(pipelined))]);
  sockets.push([await connection('127.0.0.2', 1), valid]);
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

  it.each(Object.keys(REQUESTS) as (keyof typeof REQUESTS)[])(
    '32 connections of one address pipelining 300 requests %s each are not all parsed in one turn; another address is read in the first',
    async (kind) => {
      const turns = turnCounter();
      server = serverOptions(LIMITS, 30_000).serverFactory((_request, response) => response.end('{}'));
      const reads: [number, string][] = [];
      const parsed = (request: IncomingMessage) => reads.push([turns.turn, request.socket.remoteAddress ?? '']);
      server.prependListener('request', parsed);
      server.prependListener('checkExpectation', parsed);
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
      const [connections, pipelined] = [32, 300];
      const args = [String(connections), String(pipelined), REQUESTS[kind], REQUESTS.valid];
      const client = await burstAtOnce(server, CLIENT, args, connections + 1);
      await untilLogged(client, /done/);
      turns.stop();
      client.child.kill();
      const perTurn = new Map<number, number>();
      for (const [at, address] of reads) if (address === '127.0.0.1') perTurn.set(at, (perTurn.get(at) ?? 0) + 1);
      // Past its share an address reads no further connection that turn; the one read that crossed it is parsed whole.
      expect(Math.max(...perTurn.values())).toBeLessThan(ADDRESS_READS_PER_TURN + pipelined);
      // Each one is read (a request without Host ends its connection once answered: the rest of the read is parsed).
      expect(reads.filter(([, address]) => address === '127.0.0.1').length).toBe(connections * pipelined);
      expect(reads.find(([, address]) => address === '127.0.0.2')?.[0]).toBe(reads[0]![0]);
    },
  );
});
