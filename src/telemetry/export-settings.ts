import { StartupError } from '../startup-error.js';

/**
 * Where and how spans are exported, from the standard OTEL_* variables, each checked at start: a value the SDK would
 * take as it is can make it export empty batches without end (OTEL_BSP_MAX_EXPORT_BATCH_SIZE=0) or drop every span
 * (OTEL_BSP_MAX_QUEUE_SIZE=0), and an endpoint it cannot use is silently replaced by its default. Any of these stops
 * the server at start, naming the variable (exit 2), as a bad setting of its own does.
 */
export interface ExportSettings {
  /** The traces endpoint, `…/v1/traces`. */
  readonly url: string;
  readonly maxQueueSize: number;
  readonly maxExportBatchSize: number;
  readonly scheduledDelayMillis: number;
  readonly exportTimeoutMillis: number;
}

type BatchSetting = Exclude<keyof ExportSettings, 'url'>;

/** The batch processor's variables: their defaults (the export timeout is the exporter's 10 s, not the SDK's 30 s). */
const BATCH: Record<BatchSetting, { name: string; fallback: number; max: number }> = {
  maxQueueSize: { name: 'OTEL_BSP_MAX_QUEUE_SIZE', fallback: 2048, max: 65_536 },
  maxExportBatchSize: { name: 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', fallback: 512, max: 65_536 },
  scheduledDelayMillis: { name: 'OTEL_BSP_SCHEDULE_DELAY', fallback: 5000, max: 3_600_000 },
  exportTimeoutMillis: { name: 'OTEL_BSP_EXPORT_TIMEOUT', fallback: 10_000, max: 600_000 },
};

const DEFAULT_ENDPOINT = 'http://localhost:4318';

export function exportSettings(env: NodeJS.ProcessEnv): ExportSettings {
  const batch = Object.fromEntries(
    (Object.keys(BATCH) as BatchSetting[]).map((key) => [key, integerOf(env, BATCH[key])]),
  ) as Record<BatchSetting, number>;
  if (batch.maxExportBatchSize > batch.maxQueueSize) {
    throw refused(
      `OTEL_BSP_MAX_EXPORT_BATCH_SIZE (${batch.maxExportBatchSize}) exceeds OTEL_BSP_MAX_QUEUE_SIZE (${batch.maxQueueSize})`,
    );
  }
  return { url: tracesUrl(env), ...batch };
}

function integerOf(env: NodeJS.ProcessEnv, { name, fallback, max }: { name: string; fallback: number; max: number }) {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw refused(`${name} must be a whole number from 1 to ${max}, not ${JSON.stringify(raw.slice(0, 40))}`);
  }
  return value;
}

/** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`: http(s) only. */
function tracesUrl(env: NodeJS.ProcessEnv): string {
  const own = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const [name, url] =
    own !== undefined && own !== ''
      ? ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', own]
      : [
          'OTEL_EXPORTER_OTLP_ENDPOINT',
          `${(base === undefined || base === '' ? DEFAULT_ENDPOINT : base).replace(/\/$/, '')}/v1/traces`,
        ];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw refused(`${name} is no URL: ${JSON.stringify(url.slice(0, 200))}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw refused(`${name} must be an http or https URL (OTLP over HTTP), not ${parsed.protocol}`);
  }
  return parsed.href;
}

const refused = (why: string) => new StartupError(`tracing: ${why}`);
