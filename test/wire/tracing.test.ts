import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { track, until } from '../helpers/children.js';
import { nestedIn, OtlpReceiver, spanNamed, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { readFrames, request, ROOT, type Frame } from '../helpers/wire.js';

/**
 * Traces (docs/operations.md "Tracing", §17.2): real server processes, over stdio, over HTTP and behind a real
 * gateway, export their spans over OTLP/HTTP (JSON) to a receiver this file starts; every request's spans carry the
 * caller's trace id and nest as the pipeline runs. With tracing off, no exporter is loaded, and a named trace id still
 * reaches the answer and the request's log lines.
 */
const DOCUMENTS = [
  { id: 'owl', text: 'Owls hunt small animals at night with silent wings.' },
  { id: 'heart', text: 'The heart pumps blood through arteries and veins.' },
  { id: 'lung', text: 'The lungs move oxygen into the blood.' },
  { id: 'star', text: 'Stars form in clouds of gas and dust.' },
];
const QUERY = 'nocturnal birds of prey hunting';
const HYBRID = { query: QUERY, k: 3, mode: 'hybrid', includeText: false };
const randomHex = (bytes: number) =>
  [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');
const dataDir = () => mkdtempSync(join(tmpdir(), 'rcp-tracing-'));

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await OtlpReceiver.start();
});
afterAll(async () => {
  await receiver.close();
});

/** The environment that turns tracing on: the two variables docs/operations.md names, and a short export delay. */
const traced = (service: string): NodeJS.ProcessEnv => ({
  OTEL_TRACES_EXPORTER: 'otlp',
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
  OTEL_SERVICE_NAME: service,
  OTEL_BSP_SCHEDULE_DELAY: '50',
});

/** The real binary over stdio with `env` (and `node` flags before it): send frames, read answers, read stderr. */
function stdioServer(env: NodeJS.ProcessEnv, nodeFlags: string[] = []) {
  const child = track(
    spawn(process.execPath, [...nodeFlags, 'bin/rcp-server.js', 'serve', '--stdio', '--data', dataDir()], {
      cwd: ROOT,
      env: { ...process.env, RCP_LOG_LEVEL: 'debug', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  const answers: Frame[] = [];
  readFrames(child, (frame) => answers.push(frame as Frame));
  let nextId = 1;
  return {
    stderr: () => stderr,
    async call(method: string, params: object): Promise<Frame> {
      const id = nextId++;
      child.stdin.write(`${JSON.stringify(request(id, method, params))}\n`);
      await until(
        () => answers.some((answer) => answer.id === id),
        () => `no answer to ${method}: ${stderr}`,
      );
      return answers.find((answer) => answer.id === id)!;
    },
    async close(): Promise<number | null> {
      child.stdin.end();
      return exited;
    },
  };
}

const resultOf = <T = Record<string, unknown>>(frame: Frame): T => {
  if (frame.error !== undefined) throw new Error(JSON.stringify(frame.error));
  return frame.result as T;
};

/** A retrieve's spans hold together: one request span, its stages under it, the model batch under the embedding. */
function expectRetrieveTrace(spans: ReceivedSpan[], request: ReceivedSpan): void {
  const recall = spanNamed(spans, 'retrieve.recall');
  expect(nestedIn(recall, request)).toBe(true);
  for (const name of ['retrieve.fuse', 'retrieve.hits']) expect(nestedIn(spanNamed(spans, name), request)).toBe(true);
  for (const name of ['encoder.embed', 'hnsw.search', 'bm25.search'])
    expect(nestedIn(spanNamed(spans, name), recall), name).toBe(true);
  const batch = spanNamed(spans, 'model.batch');
  expect(nestedIn(batch, spanNamed(spans, 'encoder.embed'))).toBe(true);
  expect(batch.attributes['rcp.model.batch_size']).toBeGreaterThanOrEqual(1);
  expect(batch.attributes['rcp.model.queue_wait_ms']).toBeGreaterThanOrEqual(0);
  // §15.6: no query text in any span unless tracing.includeText is on; its length is there instead.
  expect(JSON.stringify(spans.map((span) => span.attributes))).not.toContain('nocturnal');
  expect(recall.attributes['rcp.query.length']).toBe(QUERY.length);
}

const allEnded = (names: string[]) => (spans: ReceivedSpan[]) =>
  names.every((name) => spans.some((span) => span.name === name));

describe('traces exported over OTLP/HTTP', () => {
  it("over stdio: a retrieve under the caller's _meta.traceId, its stages nested, the id on the answer", async () => {
    const server = stdioServer(traced('stdio-engine'));
    resultOf(await server.call('initialize', { protocolVersion: 1 }));
    resultOf(await server.call('index/add', { documents: DOCUMENTS }));
    const traceId = randomHex(16);
    const answer = resultOf<{ _meta?: { traceId?: string } }>(
      await server.call('retrieve', { ...HYBRID, _meta: { traceId } }),
    );
    expect(answer._meta?.traceId).toBe(traceId);
    const spans = await receiver.trace(traceId, allEnded(['retrieve', 'model.batch', 'retrieve.hits']));
    const root = spanNamed(spans, 'retrieve');
    expect(root.parentSpanId).toBe('');
    expect(root.kind).toBe(2); // SERVER
    expect(root.service).toBe('stdio-engine');
    expect(root.attributes['rpc.jsonrpc.error_code']).toBe(0);
    expectRetrieveTrace(spans, root);
    // Every log line of the request carries its trace id: the request log's line here.
    const lines = server
      .stderr()
      .split('\n')
      .filter((line) => line.includes('"method":"retrieve"'));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ traceId });
    expect(await server.close()).toBe(0);
  });

  describe('over HTTP', () => {
    let server: ServerProcess;
    beforeAll(async () => {
      server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dataDir()], traced('http-engine'));
      const added = await fetch(`${server.origin}/rcp/index/add`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(request(1, 'index/add', { documents: DOCUMENTS })),
      });
      resultOf((await added.json()) as Frame);
    });
    afterAll(async () => {
      await server.stop();
    });

    it('a W3C traceparent header makes the request span its child, under its trace id', async () => {
      const traceId = randomHex(16);
      const parent = randomHex(8);
      const response = await fetch(`${server.origin}/rcp/retrieve`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${parent}-01` },
        body: JSON.stringify(request(2, 'retrieve', HYBRID)),
      });
      const answer = resultOf<{ _meta?: { traceId?: string } }>((await response.json()) as Frame);
      expect(answer._meta?.traceId).toBe(traceId);
      const spans = await receiver.trace(
        traceId,
        allEnded(['retrieve', 'model.batch', 'retrieve.hits', 'request.wait']),
      );
      const root = spanNamed(spans, 'retrieve');
      expect(root.parentSpanId).toBe(parent);
      expectRetrieveTrace(spans, root);
      // The time before its work began (body, admission, its corpus held) is a span of its own, first in the request.
      const wait = spanNamed(spans, 'request.wait');
      expect(nestedIn(wait, root)).toBe(true);
      expect(wait.startNs).toBe(root.startNs);
      expect(wait.endNs <= spanNamed(spans, 'retrieve.recall').startNs).toBe(true);
    });

    it('an error answer carries the trace id too, and its span says which code', async () => {
      const traceId = randomHex(16);
      const response = await fetch(`${server.origin}/rcp/retrieve`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(request(3, 'retrieve', { query: 'x', k: -1, _meta: { traceId } })),
      });
      const frame = (await response.json()) as { error: { code: number; data: { _meta: { traceId: string } } } };
      expect(frame.error.code).toBe(-32602);
      expect(frame.error.data._meta.traceId).toBe(traceId);
      const spans = await receiver.trace(traceId, allEnded(['retrieve']));
      expect(spanNamed(spans, 'retrieve').attributes['rpc.jsonrpc.error_code']).toBe(-32602);
    });

    it('a client id that is no W3C id is returned as given and kept on the request span', async () => {
      const response = await fetch(`${server.origin}/rcp/ping`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(request(4, 'ping', { _meta: { traceId: 'agent-run-42/step-7' } })),
      });
      const answer = resultOf<{ _meta?: { traceId?: string } }>((await response.json()) as Frame);
      expect(answer._meta?.traceId).toBe('agent-run-42/step-7');
      await until(
        () => receiver.spans.some((span) => span.attributes['rcp.client_trace_id'] === 'agent-run-42/step-7'),
        'the ping span with the client id',
      );
    });
  });

  it("through the gateway: the gateway's hop to each engine is the parent of the engine's request span", async () => {
    const engine = await startHttpProcess(
      ['serve', '--http', '127.0.0.1:0', '--data', dataDir()],
      traced('engine-http'),
    );
    const registry = join(mkdtempSync(join(tmpdir(), 'rcp-registry-')), 'rcp.json');
    writeFileSync(
      registry,
      JSON.stringify({
        engines: [
          { id: 'a', transport: 'http', url: `${engine.origin}/rcp` },
          {
            id: 'b',
            transport: 'stdio',
            command: ['node', 'bin/rcp-server.js', 'serve', '--stdio', '--data', dataDir()],
          },
        ],
      }),
    );
    const gateway = await startHttpProcess(
      ['gateway', '--registry', registry, '--id', 'gw', '--http', '127.0.0.1:0'],
      traced('gateway'),
    );
    try {
      const traceId = randomHex(16);
      // The caller's own span: the gateway's hops, not it, must be the engines' parents.
      const caller = randomHex(8);
      const response = await fetch(`${gateway.origin}/rcp/retrieve`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(
          request(1, 'retrieve', { ...HYBRID, _meta: { traceparent: `00-${traceId}-${caller}-01` } }),
        ),
      });
      const answer = resultOf<{ _meta?: { traceId?: string } }>((await response.json()) as Frame);
      expect(answer._meta?.traceId).toBe(traceId);
      const done = (spans: ReceivedSpan[]) =>
        spans.filter((span) => span.name === 'retrieve').length === 3 &&
        spans.filter((span) => span.name === 'gateway.engine').length >= 2;
      const spans = await receiver.trace(traceId, done);
      // One span under the caller's, the gateway's request (a stdio engine runs with the gateway's environment, so
      // its service name too).
      const roots = spans.filter((span) => span.parentSpanId === caller);
      expect(roots.map((span) => [span.name, span.service])).toEqual([['retrieve', 'gateway']]);
      const hops = spans.filter(
        (span) => span.name === 'gateway.engine' && span.attributes['rpc.method'] === 'retrieve',
      );
      expect(hops.map((hop) => hop.attributes['rcp.engine']).sort()).toEqual(['a', 'b']);
      for (const hop of hops) {
        expect(hop.traceId).toBe(traceId);
        const served = spans.find((span) => span.name === 'retrieve' && span.parentSpanId === hop.spanId);
        expect(served, `the engine ${String(hop.attributes['rcp.engine'])} request span`).toBeDefined();
      }
    } finally {
      await gateway.stop();
      await engine.stop();
    }
  });
});

it('a collector that is down costs a warning at shutdown, never a failed exit', async () => {
  const closed = await OtlpReceiver.start();
  await closed.close();
  const server = stdioServer({ ...traced('no-collector'), OTEL_EXPORTER_OTLP_ENDPOINT: closed.endpoint });
  resultOf(await server.call('initialize', { protocolVersion: 1 }));
  resultOf(await server.call('ping', {}));
  expect(await server.close()).toBe(0);
  expect(server.stderr()).toContain('tracing: spans held at shutdown were not all exported');
  expect(server.stderr()).not.toContain('fatal');
});

describe('tracing off', () => {
  /** Every module the process resolved (test/helpers/record-imports.mjs), after one retrieve naming a trace. */
  async function importsAfterRetrieve(
    env: NodeJS.ProcessEnv,
  ): Promise<{ imports: string; answer: Frame; log: string }> {
    const file = join(dataDir(), 'imports.txt');
    writeFileSync(file, '');
    const server = stdioServer({ RCP_TEST_IMPORTS: file, ...env }, ['--import', './test/helpers/record-imports.mjs']);
    resultOf(await server.call('initialize', { protocolVersion: 1 }));
    resultOf(await server.call('index/add', { documents: DOCUMENTS }));
    const answer = await server.call('retrieve', { ...HYBRID, _meta: { traceId: 'run-1' } });
    expect(await server.close()).toBe(0);
    return { imports: readFileSync(file, 'utf8'), answer, log: server.stderr() };
  }

  it('loads no exporter and no SDK, and still returns a named trace id and logs it', async () => {
    const off = await importsAfterRetrieve({});
    expect(off.imports).toContain('bin/rcp-server.js');
    expect(off.imports).not.toContain('exporter-trace-otlp-http');
    expect(off.imports).not.toContain('sdk-trace-base');
    expect(resultOf<{ _meta?: { traceId?: string } }>(off.answer)._meta?.traceId).toBe('run-1');
    const answered = off.log.split('\n').find((line) => line.includes('"msg":"answered"') && line.includes('retrieve'));
    expect(JSON.parse(answered ?? '{}')).toMatchObject({ traceId: 'run-1' });
    // The same recording sees them once tracing is on: what it finds missing above is missing.
    const on = await importsAfterRetrieve(traced('imports'));
    expect(on.imports).toContain('exporter-trace-otlp-http');
    expect(on.imports).toContain('sdk-trace-base');
  });
});
