import { diag, DiagLogLevel } from '@opentelemetry/api';
import type { Logger } from '../protocol/logger.js';
import { takeRequestedTraceId, useTracer } from '../protocol/tracing.js';

/**
 * The OpenTelemetry SDK, started when tracing is on (docs/operations.md "Tracing"): a tracer provider whose spans go
 * in batches to an OTLP/HTTP (JSON) exporter configured by the standard OTEL_* variables. Its modules are imported
 * here, on demand: a server with tracing off never loads them.
 */

export interface TracingSettings {
  /** `tracing.enabled`. */
  readonly enabled: boolean;
  /** §15.6 `tracing.includeText`. */
  readonly includeText: boolean;
  /** `service.name` unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names another. */
  readonly serviceName: string;
  readonly serviceVersion: string;
}

export interface Tracing {
  /** Exports what is still held (bounded by the exporter's timeout), then stops. */
  shutdown(): Promise<void>;
}

/** Whether traces are wanted: `tracing.enabled`, or OTEL_TRACES_EXPORTER naming otlp; never with OTEL_SDK_DISABLED. */
export function tracingWanted(settings: Pick<TracingSettings, 'enabled'>, env: NodeJS.ProcessEnv): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((name) => name.trim().toLowerCase());
  return settings.enabled || exporters.includes('otlp');
}

/** The SDK set up and made the tracer of protocol/tracing.ts; undefined when tracing is not wanted. */
export async function startTracing(
  settings: TracingSettings,
  env: NodeJS.ProcessEnv,
  log: Logger,
): Promise<Tracing | undefined> {
  if (!tracingWanted(settings, env)) return undefined;
  const [sdk, { OTLPTraceExporter }, resources] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  diag.setLogger(rateLimitedDiag(log), DiagLogLevel.WARN);
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (protocol !== undefined && protocol !== 'http/json') {
    log.warn({ protocol }, 'tracing: only OTLP over HTTP with JSON is built in; spans are sent as JSON');
  }
  const random = new sdk.RandomIdGenerator();
  const own = resources.resourceFromAttributes({
    'service.name': settings.serviceName,
    'service.version': settings.serviceVersion,
  });
  const detected = resources.detectResources({ detectors: [resources.envDetector] });
  const exporter = new OTLPTraceExporter();
  const provider = new sdk.BasicTracerProvider({
    resource: resources.defaultResource().merge(own).merge(detected),
    // A client's `_meta.traceId` becomes the id of the request span it names (protocol/tracing.ts).
    idGenerator: {
      generateTraceId: () => takeRequestedTraceId() ?? random.generateTraceId(),
      generateSpanId: () => random.generateSpanId(),
    },
    // Bounds: at most 2,048 spans held for export (OTEL_BSP_MAX_QUEUE_SIZE; past it spans are dropped, never queued),
    // each with at most 128 attributes of at most 1,024 characters.
    spanLimits: { attributeCountLimit: 128, attributeValueLengthLimit: 1024 },
    spanProcessors: [new sdk.BatchSpanProcessor(exporter)],
  });
  useTracer(provider.getTracer('rcp-server', settings.serviceVersion), { includeText: settings.includeText });
  log.info({ endpoint: endpointOf(env) }, 'tracing: exporting spans over OTLP/HTTP');
  return {
    shutdown: async () => {
      useTracer(undefined);
      await provider.shutdown();
    },
  };
}

/** Where spans go, for the start-up line (the exporter reads the same variables). */
function endpointOf(env: NodeJS.ProcessEnv): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (traces !== undefined && traces !== '') return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return `${base !== undefined && base !== '' ? base.replace(/\/$/, '') : 'http://localhost:4318'}/v1/traces`;
}

/** How often the SDK's own complaints (a collector down: one per failed export) reach the log at most. */
const DIAG_EVERY_MS = 60_000;

/** The SDK's warnings and errors as log lines, at most one a minute (the rest counted in the next). */
function rateLimitedDiag(log: Logger) {
  let last = Number.NEGATIVE_INFINITY;
  let skipped = 0;
  const write = (message: string, ...args: unknown[]): void => {
    const now = performance.now();
    if (now - last < DIAG_EVERY_MS) return void skipped++;
    last = now;
    const detail = args.map((arg) => (arg instanceof Error ? arg.message : String(arg))).join(' ');
    log.warn({ skipped, detail: detail.slice(0, 500) }, `tracing: ${message.slice(0, 200)}`);
    skipped = 0;
  };
  const quiet = (): void => undefined;
  return { error: write, warn: write, info: quiet, debug: quiet, verbose: quiet };
}
