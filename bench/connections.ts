/**
 * `npm run bench -- connections`: a newcomer beside a few addresses that hold every connection (§15.5, see
 * docs/operations.md, Connections). A real server process at the default connection limits (1,024 in all, 256 per
 * address; no model), and an attacker in a thread of its own: 256 connections from each of 5 loopback addresses
 * (127.0.0.3-.7; 1,280 wanted), reopening each the server closes 100 ms later, either trickling bodies
 * (`Content-Length: 100000`, then one byte a second) or holding keep-alive connections pinged every 3 s. A victim from
 * 127.0.0.2 opens a new connection and pings on it, again every 100 ms until answered: the time from its first
 * connect to its answer (connect+ping), and how many connections that took. Idle before and after, in the same run.
 * RCP_BENCH_PROBES (default 20) probes a scenario; a probe gives up after 40 s (the body timeout is 30 s).
 */
import { connect } from 'node:net';
import { Worker } from 'node:worker_threads';
import { start } from './isolation.js';

const ADDRESSES = ['127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7'];
const PER_ADDRESS = 256;
const VICTIM = '127.0.0.2';
const GIVE_UP_MS = 40_000;

/** The attacker's thread: `each` connections per address doing `kind`, reopened 100 ms after each close. */
const ATTACKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { connect } = require('node:net');
const { host, port, addresses, each, kind } = workerData;
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
const ping = 'POST /rcp/ping HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\nContent-Length: ' +
  body.length + '\\r\\n\\r\\n' + body;
const slow = 'POST /rcp/ping HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\nContent-Length: 100000\\r\\n\\r\\n';
let closes = 0;
let open = 0;
const opened = (localAddress) => {
  const socket = connect({ host, port, localAddress });
  let timer;
  socket.on('error', () => undefined);
  socket.resume();
  socket.once('connect', () => {
    open++;
    if (kind === 'slow bodies') {
      socket.write(slow);
      timer = setInterval(() => socket.write(' '), 1000);
    } else {
      socket.write(ping);
      timer = setInterval(() => socket.write(ping), 3000);
    }
  });
  socket.once('close', () => {
    if (timer !== undefined) open--;
    clearInterval(timer);
    closes++;
    setTimeout(() => opened(localAddress), 100);
  });
};
for (const address of addresses) for (let i = 0; i < each; i++) opened(address);
parentPort.on('message', () => parentPort.postMessage({ closes, open }));
`;

interface Attacker {
  /** Connections the server closed so far, and those open now. */
  count(): Promise<{ closes: number; open: number }>;
  stop(): Promise<number>;
}

function attack(origin: string, kind: string): Attacker {
  const { hostname, port } = new URL(origin);
  const workerData = { host: hostname, port: Number(port), addresses: ADDRESSES, each: PER_ADDRESS, kind };
  const worker = new Worker(ATTACKER, { eval: true, workerData });
  const count = () =>
    new Promise<{ closes: number; open: number }>((resolve) => {
      worker.once('message', resolve);
      worker.postMessage('count');
    });
  return { count, stop: () => worker.terminate() };
}

/** One connection from the victim's address: its ping answered (true), or closed unanswered or silent 5 s (false). */
function attempt(host: string, port: number): Promise<boolean> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  return new Promise((resolve) => {
    const socket = connect({ host, port, localAddress: VICTIM }, () =>
      socket.write(
        `POST /rcp/ping HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      ),
    );
    const settle = (served: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(served);
    };
    const timer = setTimeout(() => settle(false), 5000);
    let text = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (text.includes('"result"')) settle(true);
    });
    socket.once('close', () => settle(false));
  });
}

/** The victim's time to a ping answered on a new connection (ms; Infinity past GIVE_UP_MS), and connections tried. */
async function probe(origin: string): Promise<{ ms: number; tries: number }> {
  const { hostname, port } = new URL(origin);
  const started = performance.now();
  for (let tries = 1; ; tries++) {
    if (await attempt(hostname, Number(port))) return { ms: performance.now() - started, tries };
    if (performance.now() - started > GIVE_UP_MS) return { ms: Infinity, tries };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
};

async function scenario(origin: string, name: string, probes: number, attacker?: Attacker): Promise<void> {
  const held = attacker === undefined ? undefined : await attacker.count();
  const results: { ms: number; tries: number }[] = [];
  for (let i = 0; i < probes; i++) {
    results.push(await probe(origin));
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const after = attacker === undefined ? undefined : await attacker.count();
  const ms = results.map((r) => r.ms);
  const fmt = (value: number) => (Number.isFinite(value) ? `${value.toFixed(1)} ms` : `> ${GIVE_UP_MS / 1000} s`);
  const churn =
    held === undefined || after === undefined
      ? ''
      : `; attacker's sockets open ${held.open} → ${after.open} (its view, the listen backlog included), ` +
        `${after.closes - held.closes} closed by the server meanwhile`;
  console.log(
    `  ${name.padEnd(34)} p50 ${fmt(percentile(ms, 0.5)).padStart(9)}  p90 ${fmt(percentile(ms, 0.9)).padStart(9)}  ` +
      `worst ${fmt(Math.max(...ms)).padStart(9)}  connections tried ${results.reduce((n, r) => n + r.tries, 0)}/${probes}` +
      churn,
  );
}

/** Waits until the attack holds every slot it can: the server has closed some, and what it holds stopped growing. */
async function settled(attacker: Attacker): Promise<void> {
  let last = -1;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const { closes, open } = await attacker.count();
    if (closes > 0 && open <= last) return;
    last = open;
  }
}

export async function benchConnections(): Promise<void> {
  const probes = Number(process.env.RCP_BENCH_PROBES ?? 20);
  const server = await start({ RCP_MODELS_ENCODER: 'none' });
  const { origin } = server;
  try {
    console.log(
      `\nconnections: the victim's connect+ping from another address, ${probes} probes a scenario; attacker ` +
        `${ADDRESSES.length} addresses × ${PER_ADDRESS} connections, server at its default limits`,
    );
    await scenario(origin, 'idle', probes);
    for (const kind of ['slow bodies', 'keep-alive squatting']) {
      const attacker = attack(origin, kind);
      await settled(attacker);
      await scenario(origin, kind, probes, attacker);
      await attacker.stop();
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await scenario(origin, 'idle again', probes);
  } finally {
    await server.stop();
  }
}
