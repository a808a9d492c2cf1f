import { describe, expect, it } from 'vitest';
import { exportSettings } from '../../../src/telemetry/export-settings.js';
import { StartupError } from '../../../src/startup-error.js';

/** The OTEL_* values the exporter is built from: defaults, and each value that would break it refused at start. */
describe('export settings from OTEL_* variables', () => {
  it('defaults: localhost:4318, 2,048 spans held, batches of 512 every 5 s, 10 s an export', () => {
    expect(exportSettings({})).toEqual({
      url: 'http://localhost:4318/v1/traces',
      maxQueueSize: 2048,
      maxExportBatchSize: 512,
      scheduledDelayMillis: 5000,
      exportTimeoutMillis: 10_000,
    });
  });

  it('the traces endpoint as given; the base endpoint with /v1/traces', () => {
    expect(exportSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector:4318/' }).url).toBe(
      'https://collector:4318/v1/traces',
    );
    const both = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:1', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:2/t' };
    expect(exportSettings(both).url).toBe('http://b:2/t');
  });

  it.each([
    [{ OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '0' }, /OTEL_BSP_MAX_EXPORT_BATCH_SIZE must be a whole number from 1/],
    [{ OTEL_BSP_MAX_QUEUE_SIZE: '-1' }, /OTEL_BSP_MAX_QUEUE_SIZE must be/],
    [{ OTEL_BSP_SCHEDULE_DELAY: '1.5' }, /OTEL_BSP_SCHEDULE_DELAY must be/],
    [{ OTEL_BSP_EXPORT_TIMEOUT: 'soon' }, /OTEL_BSP_EXPORT_TIMEOUT must be/],
    [{ OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '200' }, /exceeds OTEL_BSP_MAX_QUEUE_SIZE/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'not-a-url' }, /OTEL_EXPORTER_OTLP_ENDPOINT is no URL/],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://collector/v1/traces' }, /must be an http or https URL/],
  ])('refuses %j at start (exit 2), naming the variable', (env, message) => {
    let thrown: unknown;
    try {
      exportSettings(env);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(StartupError);
    expect((thrown as Error).message).toMatch(message);
  });
});
