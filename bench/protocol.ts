/**
 * Protocol-layer overhead: `ping` throughput through each transport, as a ratio to in-process dispatch of the
 * same frame in the same run. In-process dispatch is the baseline: the transports add framing, I/O and
 * (for HTTP) Fastify routing on top of it.
 */
import { spawn } from 'node:child_process';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config/index.js';
import { parseFrame, serialize } from '../src/protocol/frames.js';

const FRAMES = 20_000;
const CONCURRENCY = 32;

const ping = (id: number): string => serialize({ jsonrpc: '2.0', id, method: 'ping', params: { nonce: id } });

async function inProcess(): Promise<number> {
  const app = createApp(loadConfig({ overrides: { 'log.level': 'silent', 'models.encoder': 'none' } }));
  const session = app.createSession();
  const started = performance.now();
  for (let i = 0; i < FRAMES; i += CONCURRENCY) {
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, j) => {
        const parsed = parseFrame(ping(i + j));
        if (parsed.ok) serialize(await session.handle(parsed.value));
      }),
    );
  }
  return FRAMES / ((performance.now() - started) / 1000);
}

async function stdio(): Promise<number> {
  const child = spawn(process.execPath, ['bin/rcp-server.js', 'serve', '--stdio'], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, RCP_ENCODER: 'none' },
  });
  let answered = 0;
  let buffered = '';
  const done = new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      answered += lines.length;
      if (answered >= FRAMES) resolve();
    });
  });
  const started = performance.now();
  // Pipelined, as a stdio client would: write everything, read answers as they come.
  for (let i = 0; i < FRAMES; i++) child.stdin.write(`${ping(i)}\n`);
  await done;
  const rate = FRAMES / ((performance.now() - started) / 1000);
  child.stdin.end();
  return rate;
}

async function http(): Promise<number> {
  const app = createApp(loadConfig({ overrides: { 'log.level': 'silent', 'models.encoder': 'none' } }));
  const server = await app.buildHttp();
  const origin = await server.listen({ host: '127.0.0.1', port: 0 });
  const frames = FRAMES / 4;
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < frames) {
        const id = next++;
        const response = await fetch(`${origin}/rcp/ping`, {
          method: 'POST',
          body: ping(id),
          headers: { 'content-type': 'application/json' },
        });
        await response.text();
      }
    }),
  );
  const rate = frames / ((performance.now() - started) / 1000);
  await app.close();
  return rate;
}

export async function benchProtocol(): Promise<void> {
  await inProcess(); // warm-up
  const baseline = await inProcess();
  const results = { 'in-process': baseline, stdio: await stdio(), http: await http() };
  console.log(`protocol overhead: ping, ${CONCURRENCY} in flight (ratio to in-process dispatch, same run)`);
  for (const [name, rate] of Object.entries(results)) {
    console.log(`  ${name.padEnd(11)} ${rate.toFixed(0).padStart(8)} req/s   ratio ${(rate / baseline).toFixed(3)}`);
  }
}
