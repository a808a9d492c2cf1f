import { diag, DiagLogLevel } from '@opentelemetry/api';
import type { Logger } from '../protocol/logger.js';
import { takeRequestedTraceId, untraced, useTracer } from '../protocol/tracing.js';
import { exportSettings } from './export-settings.js';

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
  /** Exports what is still held, for at most SHUTDOWN_WAIT_MS, then stops. */
  shutdown(): Promise<void>;
}

/** Whether traces are wanted: `tracing.enabled`, or OTEL_TRACES_EXPORTER naming otlp; never with OTEL_SDK_DISABLED. */
export function tracingWanted(settings: Pick<TracingSettings, 'enabled'>, env: NodeJS.ProcessEnv): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((name) => name.trim().toLowerCase());
  return settings.enabled || exporters.includes('otlp');
}

/** The most a shutdown waits for the spans still held: the drain before it has taken its own share of a stop. */
const SHUTDOWN_WAIT_MS = 5000;

/**
 * The SDK set up and made the tracer of protocol/tracing.ts; undefined when tracing is not wanted. Throws a
 * StartupError for an OTEL_* value it cannot use (export-settings.ts).
 */
export async function startTracing(
  settings: TracingSettings,
  env: NodeJS.ProcessEnv,
  log: Logger,
): Promise<Tracing | undefined> {
  if (!tracingWanted(settings, env)) return undefined;
  const { url, ...batching } = exportSettings(env);
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
  const provider = new sdk.BasicTracerProvider({
    resource: resources.defaultResource().merge(own).merge(detected),
    // A client's `_meta.traceId` becomes the id of the request span it names (protocol/tracing.ts).
    idGenerator: {
      generateTraceId: () => takeRequestedTraceId() ?? random.generateTraceId(),
      generateSpanId: () => random.generateSpanId(),
    },
    // Bounds: at most maxQueueSize spans held for export (past it spans are dropped, never queued), each with at
    // most 128 attributes of at most 1,024 characters.
    spanLimits: { attributeCountLimit: 128, attributeValueLengthLimit: 1024 },
    spanProcessors: [new sdk.BatchSpanProcessor(new OTLPTraceExporter({ url }), batching)],
  });
  useTracer(provider.getTracer('rcp-server', settings.serviceVersion), { includeText: settings.includeText });
  log.info({ endpoint: withoutCredentials(url), ...batching }, 'tracing: exporting spans over OTLP/HTTP');
  return { shutdown: () => shutDown(provider, log) };
}

/**
 * Exports what is held, for at most SHUTDOWN_WAIT_MS: a collector that is down or slow costs the stop that long and
 * one warning, never a failed exit.
 */
async function shutDown(provider: { shutdown(): Promise<void> }, log: Logger): Promise<void> {
  useTracer(undefined);
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`not done within ${SHUTDOWN_WAIT_MS} ms`), SHUTDOWN_WAIT_MS);
  });
  const flushed = provider.shutdown().then(
    () => undefined,
    (error: unknown) => describe(error),
  );
  const failure = await Promise.race([flushed, waited]);
  clearTimeout(timer);
  if (failure !== undefined) log.warn({ detail: failure }, 'tracing: spans held at shutdown were not all exported');
}

/** A URL as a log line may show it: no user or password. */
function withoutCredentials(url: string): string {
  const { protocol, host, pathname } = new URL(url);
  return `${protocol}//${host}${pathname}`;
}

/** How often each kind of the SDK's own complaints (a collector down: one per failed export) is logged at most. */
const DIAG_EVERY_MS = 60_000;
/** Kinds of complaint remembered for the limit above; past it, the oldest is forgotten. */
const DIAG_KINDS = 16;

/**
 * The SDK's warnings and errors as log lines, each kind at most once a minute (the repeats counted in the next), and
 * outside any request's trace: an export carries every caller's spans, so its failure is no one caller's.
 */
function rateLimitedDiag(log: Logger) {
  const last = new Map<string, { at: number; skipped: number }>();
  const write = (message: unknown, ...args: unknown[]): void => {
    const text = [message, ...args]
      .map(describe)
      .filter((part) => part !== '')
      .join(': ')
      .slice(0, 500);
    const kind = text.slice(0, 40);
    const now = performance.now();
    const seen = last.get(kind);
    if (seen !== undefined && now - seen.at < DIAG_EVERY_MS) return void seen.skipped++;
    last.delete(kind);
    last.set(kind, { at: now, skipped: 0 });
    if (last.size > DIAG_KINDS) last.delete(last.keys().next().value!);
    untraced(() => log.warn({ skipped: seen?.skipped ?? 0 }, `tracing: ${text}`));
  };
  const quiet = (): void => undefined;
  return { error: write, warn: write, info: quiet, debug: quiet, verbose: quiet };
}

/** A complaint's part as one line: an error's name and message (the SDK passes errors, strings and objects). */
function describe(part: unknown): string {
  if (part instanceof Error) return `${part.name}: ${part.message}`.split('\n', 1)[0]!;
  if (typeof part === 'string') return part.split('\n', 1)[0]!;
  if (typeof part === 'object' && part !== null && 'message' in part) return describe(String(part.message));
  return part === undefined ? '' : (JSON.stringify(part) ?? '').slice(0, 200);
}
