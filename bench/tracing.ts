/**
 * `npm run bench -- tracing`: what OpenTelemetry tracing costs a request over HTTP (docs/architecture.md §4.1), every
 * figure a ratio to tracing off measured in the same run. Three real server processes (`bin/rcp-server.js serve`,
 * dist/) over one data dir: tracing off (the default), on (OTEL_TRACES_EXPORTER=otlp, every request sampled) and on
 * but sampled out (OTEL_TRACES_SAMPLER=traceidratio, OTEL_TRACES_SAMPLER_ARG=0: the API's cost without the export).
 * The spans go to an OTLP/HTTP receiver per traced server, a node:http process of its own that reads each JSON body,
 * counts its spans by trace and answers 200 `{}`, so the export is real work on the same machine.
 *
 * Each round loads the three back to back, part after part, their order rotating by round: `ping` at 8 connections
 * (autocannon: req/s, p50, p99), one client's hybrid `retrieve`s (k 10, includeText false; each SciFact query sent to
 * the three in turn: p50, p99), and hybrid `retrieve` at 4 connections (req/s); for the loaded runs also the server's
 * CPU time per request (/proc), the figure that others' load on this machine moves least. RCP_BENCH_TRACING_ROUNDS
 * rounds (default 7), after an untimed warm-up; the table gives each mode's median over rounds and the median of the
 * per-round ratios. Then each server's RSS, and, once the servers have stopped (flushing what they hold), the spans
 * received per request: a check that the traced server exported every request (ping: 1, retrieve: one per stage) and
 * the sampled-out one nothing.
 *
 * The corpus: RCP_BENCH_DATA (a data dir that holds one already, e.g. SciFact ingested with `rcp-server ingest`), else
 * the first RCP_BENCH_TRACING_DOCS (default 1,000) SciFact abstracts ingested into a temporary dir. The queries are
 * SciFact's, from `--scifact DIR` or RCP_SCIFACT, else ../shared/data/scifact. RCP_BENCH_SECONDS sets each autocannon
 * run (default 3); RCP_BENCH_TRACING_QUERIES the one-client retrieves per run (default 120).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHttpProcess, type ServerProcess } from '../test/helpers/processes.js';
import { rss } from './burst.js';
import { call } from './client.js';
import { ingest, load, percentile, stopper, waitForOrigin, type Load } from './http.js';
import { queryTexts } from './scifact.js';

const ROUNDS = Number(process.env.RCP_BENCH_TRACING_ROUNDS ?? 7);
const SECONDS = Number(process.env.RCP_BENCH_SECONDS ?? 3);
const QUERIES = Number(process.env.RCP_BENCH_TRACING_QUERIES ?? 120);
const DOCS = Number(process.env.RCP_BENCH_TRACING_DOCS ?? 1000);
const PING_CONNECTIONS = 8;
const RETRIEVE_CONNECTIONS = 4;
const WARM_SECONDS = 2;

/** The OTLP/HTTP receiver: spans counted by trace, the trace named by its root span (the request's, §4.1). */
const RECEIVER = `
import { createServer } from 'node:http';
import { gunzipSync } from 'node:zlib';
const traces = new Map();
let posts = 0;
const server = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    if (request.method === 'GET') {
      const byRoot = {};
      for (const [root, spans] of traces.values()) {
        const entry = (byRoot[root ?? '(no root)'] ??= { traces: 0, spans: 0 });
        entry.traces++;
        entry.spans += spans;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      return response.end(JSON.stringify({ posts, byRoot }));
    }
    let body = Buffer.concat(chunks);
    if (request.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
    posts++;
    for (const resource of JSON.parse(body.toString('utf8')).resourceSpans ?? [])
      for (const scope of resource.scopeSpans ?? [])
        for (const span of scope.spans ?? []) {
          const trace = traces.get(span.traceId) ?? [undefined, 0];
          trace[1]++;
          if (!span.parentSpanId) trace[0] = span.name;
          traces.set(span.traceId, trace);
        }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{}');
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write('listening http://127.0.0.1:' + server.address().port + '\\n'));
`;

interface Receiver {
  readonly origin: string;
  stats(): Promise<{ posts: number; byRoot: Record<string, { traces: number; spans: number }> }>;
  stop(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', RECEIVER], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const origin = await waitForOrigin(child, /listening (http:\/\/\S+)/, 'stdout');
  return {
    origin,
    stats: async () => (await fetch(`${origin}/stats`)).json() as ReturnType<Receiver['stats']>,
    stop: stopper(child),
  };
}

interface Mode {
  readonly label: string;
  readonly receiver?: Receiver;
  server?: ServerProcess;
  /** Requests it answered, by method: what its spans are counted against. */
  readonly answered: { ping: number; retrieve: number };
}

/** Tracing settings as the environment gives them, every one named so that the caller's own cannot leak in. */
function tracingEnv(mode: 'off' | 'on' | 'sampled out', receiver: Receiver | undefined): NodeJS.ProcessEnv {
  if (mode === 'off') return { OTEL_TRACES_EXPORTER: 'none', RCP_TRACING_ENABLED: 'false', OTEL_SDK_DISABLED: '' };
  return {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver!.origin,
    OTEL_SDK_DISABLED: '',
    ...(mode === 'on'
      ? { OTEL_TRACES_SAMPLER: 'parentbased_always_on' }
      : { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }),
  };
}

interface Figures {
  pingRate: number;
  pingP50: number;
  pingP99: number;
  retrieveP50: number;
  retrieveP99: number;
  retrieveRate: number;
  pingCpu: number;
  retrieveCpu: number;
}

const ROWS: [keyof Figures, string, number][] = [
  ['pingRate', `ping req/s, ${PING_CONNECTIONS} conn`, 0],
  ['pingP50', `ping p50 ms, ${PING_CONNECTIONS} conn`, 2],
  ['pingP99', `ping p99 ms, ${PING_CONNECTIONS} conn`, 2],
  ['retrieveP50', 'retrieve p50 ms, 1 client', 2],
  ['retrieveP99', 'retrieve p99 ms, 1 client', 2],
  ['retrieveRate', `retrieve req/s, ${RETRIEVE_CONNECTIONS} conn`, 1],
  ['pingCpu', `ping server CPU µs/req`, 0],
  ['retrieveCpu', `retrieve server CPU ms/req`, 2],
];

/** Clock ticks per second of /proc's CPU times. */
const TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/**
 * CPU seconds a process has used, user and system, from /proc (Linux): unlike a rate, what a request costs in CPU
 * hardly moves when others load the machine.
 */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    0.5,
  );

export async function benchTracing(): Promise<void> {
  const given = process.env.RCP_BENCH_DATA;
  const data = given ?? mkdtempSync(join(tmpdir(), 'rcp-bench-tracing-'));
  const queries = queryTexts();
  const params = (i: number) => ({ query: queries[i % queries.length], k: 10, mode: 'hybrid', includeText: false });
  const load0 = loadavg().map((value) => value.toFixed(2));
  console.log(
    `\ntracing: off, on and on but sampled out, ${ROUNDS} rounds, autocannon ${SECONDS} s per run; ` +
      `load average at start ${load0.join(' ')} (${cpus().length} CPUs)`,
  );
  if (given === undefined) ingest(data, DOCS);
  const modes: Mode[] = [];
  try {
    for (const label of ['off', 'on', 'sampled out'] as const) {
      const receiver = label === 'off' ? undefined : await startReceiver();
      const mode: Mode = { label, ...(receiver && { receiver }), answered: { ping: 0, retrieve: 0 } };
      modes.push(mode);
      const args = ['serve', '--http', '127.0.0.1:0', '--data', data];
      mode.server = await startHttpProcess(args, tracingEnv(label, receiver), { readyWithinMs: 300_000 });
    }
    /** A loaded run, its refusals and errors said, with the server's CPU time per request answered (ms). */
    const counted = async (mode: Mode, method: 'ping' | 'retrieve', work: () => Promise<Load>) => {
      const pid = mode.server!.child.pid!;
      const cpu = cpuSeconds(pid);
      const run = await work();
      const answered = run.ok + run.refused + run.otherErrors;
      mode.answered[method] += answered;
      if (run.refused + run.otherErrors + run.timeouts > 0)
        console.log(
          `  ${mode.label} ${method}: -32011 ${run.refused}, errors ${run.otherErrors}, timeouts ${run.timeouts}`,
        );
      return { ...run, cpuMs: ((cpuSeconds(pid) - cpu) * 1000) / Math.max(1, answered) };
    };
    const ping = (mode: Mode, seconds: number) =>
      counted(mode, 'ping', () =>
        load(
          mode.server!.origin,
          '/rcp/ping',
          PING_CONNECTIONS,
          (i) => ({ method: 'ping', params: { nonce: i } }),
          seconds,
        ),
      );
    const retrieveRate = (mode: Mode, seconds: number) =>
      counted(mode, 'retrieve', () =>
        load(
          mode.server!.origin,
          '/rcp/retrieve',
          RETRIEVE_CONNECTIONS,
          (i) => ({ method: 'retrieve', params: params(i) }),
          seconds,
        ),
      );
    /**
     * One client's retrieves, one after another, each query sent to every mode in turn (the order rotating), so that
     * the load others put on this machine falls on every mode alike: latencies (sorted) by mode.
     */
    const retrieveLatencies = async () => {
      const latencies = modes.map(() => [] as number[]);
      for (let i = 0; i < QUERIES; i++) {
        for (let turn = 0; turn < modes.length; turn++) {
          const at = (i + turn) % modes.length;
          const started = performance.now();
          await call(modes[at]!.server!.origin, 'retrieve', params(i));
          latencies[at]!.push(performance.now() - started);
        }
      }
      for (const mode of modes) mode.answered.retrieve += QUERIES;
      return latencies.map((values) => values.sort((a, b) => a - b));
    };
    // Warm every server (JIT, connections, the model's first batches, pages of the store), untimed.
    for (const mode of modes) {
      await ping(mode, WARM_SECONDS);
      await retrieveRate(mode, WARM_SECONDS);
    }
    const rounds: Figures[][] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const figures = modes.map(() => ({}) as Figures);
      // The order rotates by round (off, on, sampled out; on, sampled out, off; ...): no mode always runs first.
      const order = modes.map((_, turn) => (round + turn) % modes.length);
      for (const i of order) {
        const run = await ping(modes[i]!, SECONDS);
        Object.assign(figures[i]!, {
          pingRate: run.rate,
          pingP50: run.p50,
          pingP99: run.p99,
          pingCpu: run.cpuMs * 1000,
        });
      }
      for (const [i, latencies] of (await retrieveLatencies()).entries()) {
        Object.assign(figures[i]!, {
          retrieveP50: percentile(latencies, 0.5),
          retrieveP99: percentile(latencies, 0.99),
        });
      }
      for (const i of order) {
        const run = await retrieveRate(modes[i]!, SECONDS);
        Object.assign(figures[i]!, { retrieveRate: run.rate, retrieveCpu: run.cpuMs });
      }
      rounds.push(figures);
    }
    const rssMb = modes.map((mode) => rss(mode.server!.child.pid!) / (1024 * 1024));
    // SIGTERM: a traced server exports what it still holds before it exits (withTracing's shutdown).
    for (const mode of modes) await mode.server!.stop();
    report(rounds, rssMb);
    for (const mode of modes.filter((candidate) => candidate.receiver !== undefined)) {
      // The SDK's own complaints (spans dropped past its queue, a failed export) reach the log as `tracing:` lines.
      const complaints = mode
        .server!.stderr()
        .split('\n')
        .filter((line) => line.includes('"level":40') && line.includes('tracing:'));
      for (const line of complaints.slice(0, 3)) console.log(`  ${mode.label}, server log: ${line.slice(0, 300)}`);
      const { posts, byRoot } = await mode.receiver!.stats();
      const per = (method: 'ping' | 'retrieve') => {
        const { traces = 0, spans = 0 } = byRoot[method] ?? {};
        const answered = mode.answered[method];
        return (
          `${method} ${(spans / Math.max(1, answered)).toFixed(2)} spans/request ` +
          `(${traces} traces of ${answered} answered, ${(spans / Math.max(1, traces)).toFixed(2)} spans each)`
        );
      };
      const others = Object.entries(byRoot)
        .filter(([root]) => root !== 'ping' && root !== 'retrieve')
        .map(([root, { spans }]) => `${root}: ${spans}`);
      console.log(
        `  spans received, ${mode.label}: ${per('ping')}; ${per('retrieve')}; ${posts} exports` +
          (others.length > 0 ? `; other roots ${others.join(', ')}` : ''),
      );
    }
    console.log(
      `  load average at end ${loadavg()
        .map((value) => value.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    for (const mode of modes) {
      await mode.server?.stop();
      await mode.receiver?.stop();
    }
    if (given === undefined) rmSync(data, { recursive: true, force: true });
  }
}

/** Each mode's median over rounds, and the median of the per-round ratios to off (each round's own drift cancels). */
function report(rounds: Figures[][], rssMb: number[]): void {
  const column = (text: string, width: number) => text.padStart(width);
  console.log(
    `  ${'case'.padEnd(26)}${column('off', 10)}${column('on', 10)}${column('on/off', 9)}` +
      `${column('sampled out', 13)}${column('s.o./off', 10)}   on/off by round`,
  );
  for (const [key, name, digits] of ROWS) {
    const values = [0, 1, 2].map((mode) => median(rounds.map((round) => round[mode]![key])));
    const ratios = [1, 2].map((mode) => rounds.map((round) => round[mode]![key] / round[0]![key]));
    console.log(
      `  ${name.padEnd(26)}${column(values[0]!.toFixed(digits), 10)}${column(values[1]!.toFixed(digits), 10)}` +
        `${column(median(ratios[0]!).toFixed(3), 9)}${column(values[2]!.toFixed(digits), 13)}` +
        `${column(median(ratios[1]!).toFixed(3), 10)}   ${ratios[0]!.map((ratio) => ratio.toFixed(3)).join(' ')}`,
    );
  }
  console.log(
    `  ${'server RSS MB, after run'.padEnd(26)}${column(rssMb[0]!.toFixed(0), 10)}${column(rssMb[1]!.toFixed(0), 10)}` +
      `${column((rssMb[1]! / rssMb[0]!).toFixed(3), 9)}${column(rssMb[2]!.toFixed(0), 13)}` +
      `${column((rssMb[2]! / rssMb[0]!).toFixed(3), 10)}`,
  );
}
