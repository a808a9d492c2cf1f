/**
 * Memory after a burst of large bodies: a real server process over HTTP, idle RSS measured once the model is warm, then
 * RCP_BURST_CLIENTS (default 30) connections each POST a body of RCP_BURST_MB (default 15) MB at once — an embed of
 * one long text (RCP_BURST_KIND=embed, default) or a ping whose params carry the bytes (frame). Reports idle, peak,
 * and settled RSS (the smallest sample of the last 5 s of RCP_BURST_SETTLE_S, default 20 s, after the last answer) as
 * ratios to idle, with the V8 heap, external and array-buffer bytes from /metrics at idle and settled: what is ours
 * (heap, buffers) against what the allocator keeps (RSS beyond them).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLIENTS = Number(process.env.RCP_BURST_CLIENTS ?? 30);
const BODY_MB = Number(process.env.RCP_BURST_MB ?? 15);
const KIND = process.env.RCP_BURST_KIND ?? 'embed';
const SETTLE_S = Number(process.env.RCP_BURST_SETTLE_S ?? 20);
const MB = 1024 * 1024;

/** A process's resident set, bytes, from /proc (Linux). */
export function rss(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb ?? 0) * 1024;
}

/** Resident bytes by kind of mapping: the brk heap (glibc's main arena), anonymous mappings by size, files. */
function mappings(pid: number): string {
  const totals = new Map<string, number>();
  let kind = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head !== null) {
      const size = (parseInt(head[2]!, 16) - parseInt(head[1]!, 16)) / MB;
      const name = head[3]!;
      kind =
        name === '[heap]'
          ? 'brk'
          : name !== ''
            ? 'file/other'
            : size >= 60 && size <= 64
              ? 'anon 64M (arena?)'
              : size >= 1
                ? 'anon >=1M'
                : 'anon <1M';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss !== null) totals.set(kind, (totals.get(kind) ?? 0) + Number(rss[1]) * 1024);
  }
  return [...totals].map(([name, bytes]) => `${name} ${(bytes / MB).toFixed(0)} MB`).join(', ');
}

function post(port: number, path: string, body: Buffer | string): Promise<string> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk.slice(0, 200 - text.length)));
      res.on('end', () => resolve(text));
    });
    req.on('error', (error) => resolve(`error: ${error.message}`));
    req.end(body);
  });
}

async function heap(port: number): Promise<string> {
  const text = await new Promise<string>((resolve) => {
    httpRequest({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
      let all = '';
      res.on('data', (chunk: Buffer) => (all += chunk.toString('utf8')));
      res.on('end', () => resolve(all));
    }).end();
  });
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN) / MB;
  return (
    `heap used ${value('rcp_nodejs_heap_size_used_bytes').toFixed(0)} MB of ` +
    `${value('rcp_nodejs_heap_size_total_bytes').toFixed(0)}, external ${value('rcp_nodejs_external_memory_bytes').toFixed(0)} MB`
  );
}

function body(id: number): Buffer {
  const filler = 'a'.repeat(BODY_MB * MB - 200);
  const frame =
    KIND === 'frame'
      ? { jsonrpc: '2.0', id, method: 'ping', params: { nonce: filler } }
      : { jsonrpc: '2.0', id, method: 'embed', params: { inputs: [filler] } };
  return Buffer.from(JSON.stringify(frame));
}

export async function benchBurst(): Promise<void> {
  const port = 19_000 + Math.floor(Math.random() * 1000);
  const dir = mkdtempSync(join(tmpdir(), 'rcp-bench-burst-'));
  const child = spawn(process.execPath, ['bin/rcp-server.js', 'serve', '--http', `127.0.0.1:${port}`, '--data', dir], {
    cwd: ROOT,
    env: { ...process.env, RCP_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const pid = child.pid!;
  for (let i = 0; i < 600; i++) {
    const answer = await post(
      port,
      '/rcp/embed',
      JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'embed', params: { inputs: ['warm'] } }),
    );
    if (answer.includes('"result"')) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const idle = rss(pid);
  const idleHeap = await heap(port);
  console.log(`  idle where: ${mappings(pid)}`);
  const bodies = Array.from({ length: CLIENTS }, (_, i) => body(i + 1));
  let peak = idle;
  const sampler = setInterval(() => (peak = Math.max(peak, rss(pid))), 20);
  const started = performance.now();
  const answers = await Promise.all(bodies.map((b) => post(port, `/rcp/${KIND === 'frame' ? 'ping' : 'embed'}`, b)));
  const burstMs = performance.now() - started;
  bodies.length = 0;
  const samples: number[] = [];
  for (let t = 0; t < SETTLE_S * 10; t++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    samples.push(rss(pid));
  }
  clearInterval(sampler);
  const settled = Math.min(...samples.slice(-50));
  // The resident set at each 5 s after the last answer: when the heap's garbage and what it held are given back.
  const curve = samples.filter((_, i) => (i + 1) % 50 === 0).map((bytes) => (bytes / idle).toFixed(2));
  console.log(`  after the burst, every 5 s (× idle): ${curve.join(' ')}`);
  const kinds = new Map<string, number>();
  for (const answer of answers) {
    const key = /"code":(-?\d+)/.exec(answer)?.[1] ?? (answer.includes('"result"') ? 'ok' : answer.slice(0, 40));
    kinds.set(key, (kinds.get(key) ?? 0) + 1);
  }
  console.log(
    `burst: ${CLIENTS} × ${BODY_MB} MB ${KIND} bodies in ${burstMs.toFixed(0)} ms: ${JSON.stringify([...kinds])}`,
  );
  console.log(`  idle    ${(idle / MB).toFixed(0)} MB (${idleHeap})`);
  console.log(`  peak    ${(peak / MB).toFixed(0)} MB = ${(peak / idle).toFixed(2)}× idle`);
  console.log(`  settled ${(settled / MB).toFixed(0)} MB = ${(settled / idle).toFixed(2)}× idle (${await heap(port)})`);
  console.log(`  where: ${mappings(pid)}`);
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('close', resolve));
}
