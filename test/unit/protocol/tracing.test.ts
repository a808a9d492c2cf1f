import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcError } from '../../../src/protocol/errors.js';
import {
  currentTraceId,
  logCorrelation,
  outgoingTrace,
  requestTrace,
  stage,
  tracingOn,
} from '../../../src/protocol/tracing.js';
import { startTracing, tracingWanted, type Tracing } from '../../../src/telemetry/index.js';
import { OtlpReceiver, spanNamed } from '../../helpers/otlp-receiver.js';
import { silentLogger } from '../../helpers/logger.js';

/**
 * protocol/tracing.ts (docs/architecture.md §14, §17.2): which trace a request runs in, what its answer and log lines
 * carry, and what is exported — off first (nothing unless a trace is named), then on, through the real SDK and OTLP
 * exporter to a receiver.
 */
const W3C_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const HEADER = `00-${W3C_ID}-00f067aa0ba902b7-01`;

describe('tracing off', () => {
  it('a request that names no trace runs as it is: no trace, no context', () => {
    expect(tracingOn()).toBe(false);
    expect(requestTrace('ping', 1, {}, undefined)).toBeUndefined();
    expect(requestTrace('ping', 1, { _meta: { progressToken: 1 } }, { arrivedAt: 0 })).toBeUndefined();
  });

  it('a named id travels with the work, to its log lines and to a request it sends on', async () => {
    const traced = requestTrace('retrieve', 1, { _meta: { traceId: 'agent-42' } }, undefined);
    expect(traced?.traceId).toBe('agent-42');
    await traced?.run(async () => {
      await Promise.resolve();
      expect(currentTraceId()).toBe('agent-42');
      expect(logCorrelation()).toEqual({ traceId: 'agent-42' });
      expect(outgoingTrace()?.meta).toEqual({ traceId: 'agent-42' });
    });
    expect(currentTraceId()).toBeUndefined();
  });

  it('a W3C header or id is the trace, passed on as a traceparent', async () => {
    const traced = requestTrace('retrieve', 1, {}, { traceparent: HEADER });
    expect(traced?.traceId).toBe(W3C_ID);
    await traced?.run(async () => {
      await Promise.resolve();
      expect(outgoingTrace()?.headers.traceparent).toMatch(new RegExp(`^00-${W3C_ID}-[0-9a-f]{16}-01$`));
    });
    expect(requestTrace('retrieve', 1, { _meta: { traceId: W3C_ID } }, undefined)?.traceId).toBe(W3C_ID);
  });

  it('an id that is no such value is ignored, not echoed (§4.4: a _meta key is never an error here)', () => {
    for (const traceId of ['', 'x'.repeat(129), 'a\nforged log line', 'tab\there', 42, { id: 1 }]) {
      expect(requestTrace('ping', 1, { _meta: { traceId } }, undefined), JSON.stringify(traceId)).toBeUndefined();
    }
    const junk = requestTrace('ping', 1, { _meta: { traceparent: '00-zz-yy-01' } }, { traceparent: 'nonsense' });
    expect(junk).toBeUndefined();
  });

  it('a stage is only its work', () => {
    expect(stage('x', {}, () => 7)).toBe(7);
  });

  it('is not wanted unless asked for; OTEL_SDK_DISABLED wins', () => {
    expect(tracingWanted({ enabled: false }, {})).toBe(false);
    expect(tracingWanted({ enabled: false }, { OTEL_TRACES_EXPORTER: 'console, otlp' })).toBe(true);
    expect(tracingWanted({ enabled: true }, {})).toBe(true);
    expect(tracingWanted({ enabled: true }, { OTEL_SDK_DISABLED: 'true' })).toBe(false);
  });
});

describe('tracing on', () => {
  let receiver: OtlpReceiver;
  let tracing: Tracing | undefined;
  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    const env = { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint };
    const settings = { enabled: false, includeText: false, serviceName: 'unit', serviceVersion: '0' };
    tracing = await startTracing(settings, env, silentLogger);
  });
  afterAll(async () => {
    await receiver.close();
  });

  it('records a request span under the client W3C id, its stages under it, and answers the id', async () => {
    expect(tracingOn()).toBe(true);
    const traced = requestTrace('retrieve', 'r1', { _meta: { traceId: W3C_ID } }, undefined);
    expect(traced).toBeDefined();
    await traced?.run(async () => {
      await stage('retrieve.recall', { 'rcp.k': 5 }, () => Promise.resolve(stage('hnsw.search', {}, () => 1)));
      const refusal = RpcError.invalidParams('query.uri', "'/etc/patient-4711.txt' is outside content.fetch.fileRoots");
      await expect(stage('content.fetch', {}, () => Promise.reject(refusal))).rejects.toBe(refusal);
    });
    traced?.answered(0);
    expect(traced?.traceId).toBe(W3C_ID);
    // Work outside any request's span records nothing.
    expect(stage('outside', {}, () => 2)).toBe(2);
    await tracing?.shutdown();
    const spans = await receiver.trace(W3C_ID, (found) => found.length === 4);
    const root = spanNamed(spans, 'retrieve');
    expect(root.parentSpanId).toBe('');
    expect(root.attributes).toMatchObject({ 'rpc.method': 'retrieve', 'rpc.jsonrpc.request_id': 'r1' });
    expect(spanNamed(spans, 'retrieve.recall').parentSpanId).toBe(root.spanId);
    expect(spanNamed(spans, 'hnsw.search').parentSpanId).toBe(spanNamed(spans, 'retrieve.recall').spanId);
    expect(receiver.spans.some((span) => span.name === 'outside')).toBe(false);
    expect(root.service).toBe('unit');
    // §15.6: a failed stage says what kind of failure, never its message (paths, addresses, values).
    expect(spanNamed(spans, 'content.fetch').status).toEqual({ code: 2, message: 'RpcError -32602' });
  });
});
