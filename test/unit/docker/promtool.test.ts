import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * docker/prometheus (docs/operations.md, "Dashboards and alerts") checked by Prometheus's own promtool: the alert rules
 * and the scrape configuration parse, and the rules' unit tests (docker/prometheus/alerts.test.yaml: synthetic
 * series, the error-rate, refusal, model-queue and gateway alerts firing when they should and not before) pass.
 * promtool is Debian's `prometheus` package, which .ci/run installs; elsewhere, without it, these are skipped (CI
 * runs them, and fails if it cannot). That every metric they name exists is test/wire/dashboards.test.ts's.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const PROMETHEUS = join(ROOT, 'docker/prometheus');
const PROMTOOL = (process.env.PATH ?? '')
  .split(delimiter)
  .map((dir) => join(dir, 'promtool'))
  .find((file) => existsSync(file));

async function promtool(...args: string[]): Promise<string> {
  if (PROMTOOL === undefined) throw new Error("promtool is not on PATH: install Debian's prometheus package");
  const { stdout, stderr } = await promisify(execFile)(PROMTOOL, args, { cwd: PROMETHEUS, encoding: 'utf8' }).catch(
    (error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`promtool ${args.join(' ')} failed:\n${error.stdout ?? ''}${error.stderr ?? error.message}`);
    },
  );
  return stdout + stderr;
}

describe.skipIf(PROMTOOL === undefined && process.env.CI === undefined)(
  "docker/prometheus under promtool (skipped where Debian's prometheus package is not installed)",
  () => {
    it('the alert rules parse', async () => {
      expect(await promtool('check', 'rules', 'alerts.yaml')).toMatch(/SUCCESS: \d+ rules found/);
    });

    it('the scrape configuration parses and loads the rules', async () => {
      const out = await promtool('check', 'config', 'prometheus.yml');
      expect(out).toContain('SUCCESS: 1 rule files found');
      expect(out).toContain('is valid prometheus config file syntax');
    });

    it("the rules' unit tests pass: the alerts fire on synthetic series, and only after their `for:`", async () => {
      expect(await promtool('test', 'rules', 'alerts.test.yaml')).toContain('SUCCESS');
    });
  },
);

describe('docker/prometheus/alerts.yaml', () => {
  it('gives every alert a for:, a severity and a summary and description to act on', () => {
    const { groups } = parse(readFileSync(join(PROMETHEUS, 'alerts.yaml'), 'utf8')) as {
      groups: { rules: { alert?: string; for?: string; labels?: Record<string, string>; annotations?: object }[] }[];
    };
    const alerts = groups.flatMap((group) => group.rules).filter((rule) => rule.alert !== undefined);
    expect(alerts.length).toBeGreaterThan(5);
    for (const { alert, for: lasting, labels, annotations } of alerts) {
      expect(lasting, alert).toMatch(/^\d+[smh]$/);
      expect(['critical', 'warning'], alert).toContain(labels?.severity);
      expect(Object.keys(annotations ?? {}).sort(), alert).toEqual(['description', 'summary']);
    }
  });
});
