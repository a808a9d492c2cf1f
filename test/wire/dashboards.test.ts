import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import type { Corpus } from '../../src/corpus/index.js';
import { createGateway } from '../../src/gateway/gateway.js';
import { Metrics } from '../../src/metrics.js';
import type { Models } from '../../src/models/index.js';
import { INITIALIZE, request, ROOT, testConfig } from '../helpers/wire.js';

/**
 * docker/grafana/rcp-server.json and docker/prometheus/alerts.yaml (docs/operations.md, "Dashboards and alerts") name
 * only metrics, and labels of them, that rcp-server exports (§17). What it exports is read from real servers' metrics
 * endpoints after real traffic: a server with a model and a corpus, scraped on its operator listener as Prometheus
 * does in docker/compose.yaml, and a gateway in front of it (rcp_gateway_*). A replica's metrics need a PostgreSQL
 * store of record; they are read from src/metrics.ts's Metrics with a replica wired in.
 */
const DASHBOARD = join(ROOT, 'docker/grafana/rcp-server.json');
const ALERTS = join(ROOT, 'docker/prometheus/alerts.yaml');

/** Labels Prometheus adds to every series it scrapes (the target's), whatever the server exports. */
const TARGET_LABELS = ['instance', 'job'];
/** Series that are Prometheus's own, not the server's. */
const PROMETHEUS_SERIES: Record<string, readonly string[]> = { up: [] };
const HISTOGRAM_SUFFIXES = ['_bucket', '_sum', '_count'];

/** What a metrics endpoint exports: each metric family's type, and the labels its series carry. */
interface Exported {
  readonly types: Map<string, string>;
  readonly labels: Map<string, Set<string>>;
}

/** Reads Prometheus text exposition into `into`: families from `# TYPE`, labels from the samples. */
function readExposition(text: string, into: Exported): void {
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type !== null) {
      into.types.set(type[1]!, type[2]!);
      if (!into.labels.has(type[1]!)) into.labels.set(type[1]!, new Set());
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? /.exec(line);
    if (sample === null) continue;
    const family = familyOf(sample[1]!, into.types);
    for (const [, label] of (sample[2] ?? '').matchAll(/([a-zA-Z_]\w*)="/g)) {
      if (label !== 'le') into.labels.get(family ?? sample[1]!)?.add(label!);
    }
  }
}

/** The family a series name belongs to (a histogram's `_bucket`, `_sum`, `_count` are its own), if exported. */
function familyOf(name: string, types: ReadonlyMap<string, string>): string | undefined {
  if (types.has(name)) return name;
  const suffix = HISTOGRAM_SUFFIXES.find((end) => name.endsWith(end));
  const base = suffix === undefined ? undefined : name.slice(0, -suffix.length);
  return base !== undefined && types.get(base) === 'histogram' ? base : undefined;
}

/** A PromQL expression's metric names, the labels its selectors match on (by metric), and its grouping labels. */
interface Named {
  readonly metrics: Set<string>;
  readonly selectors: { metric: string; labels: string[] }[];
  readonly grouping: string[];
}

/** Words of PromQL that are neither metrics nor calls: binary operators and modifiers. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/**
 * Enough of PromQL to find what an expression names: strings are blanked, `{...}` matchers read and dropped,
 * `by`/`without`/`on`/`ignoring`/`group_left`/`group_right` lists read and dropped, ranges dropped; then every word
 * not followed by `(` (a function or aggregation) and not a keyword is a metric name.
 */
function promql(expr: string): Named {
  const selectors: Named['selectors'] = [];
  const grouping: string[] = [];
  let rest = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  rest = rest.replace(/([a-zA-Z_:][\w:]*)?\s*\{([^}]*)\}/g, (_, metric: string | undefined, matchers: string) => {
    const labels = [...matchers.matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((match) => match[1]!);
    selectors.push({ metric: metric ?? '', labels });
    return ` ${metric ?? ''} `;
  });
  rest = rest.replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_, labels: string) => {
    grouping.push(
      ...labels
        .split(',')
        .map((label) => label.trim())
        .filter((label) => label !== ''),
    );
    return ' ';
  });
  rest = rest.replace(/\[[^\]]*\]/g, ' ');
  const metrics = new Set<string>();
  for (const match of rest.matchAll(/(?<![\w$.])([a-zA-Z_:][\w:]*)(?!\w)(\s*\()?/g)) {
    if (match[2] === undefined && !KEYWORDS.has(match[1]!)) metrics.add(match[1]!);
  }
  return { metrics, selectors, grouping };
}

interface Panel {
  readonly title?: string;
  readonly type?: string;
  readonly targets?: { expr?: string }[];
  readonly panels?: Panel[];
}

/** Every query of the dashboard: each panel's targets (rows' nested panels too), and the templating queries. */
function dashboardQueries(): { where: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: Panel[];
    templating: { list: { name: string; type: string; query?: string | { query: string } }[] };
  };
  const queries: { where: string; expr: string }[] = [];
  const visit = (panel: Panel) => {
    if (panel.type !== 'row') expect(panel.targets?.length, `panel "${panel.title}" has no query`).toBeGreaterThan(0);
    for (const target of panel.targets ?? [])
      queries.push({ where: `panel "${panel.title}"`, expr: target.expr ?? '' });
    for (const inner of panel.panels ?? []) visit(inner);
  };
  dashboard.panels.forEach(visit);
  for (const variable of dashboard.templating.list) {
    if (variable.type !== 'query') continue;
    const query = typeof variable.query === 'string' ? variable.query : (variable.query?.query ?? '');
    // label_values(metric, label): the metric and a label of it, as a selector says them.
    const values = /^label_values\(\s*([a-zA-Z_:][\w:]*)\s*,\s*([a-zA-Z_]\w*)\s*\)$/.exec(query);
    expect(values, `variable $${variable.name}: ${query}`).not.toBeNull();
    queries.push({ where: `variable $${variable.name}`, expr: `${values![1]}{${values![2]}!=""}` });
  }
  return queries;
}

function alertQueries(): { where: string; expr: string }[] {
  const rules = parse(readFileSync(ALERTS, 'utf8')) as {
    groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
  };
  return rules.groups.flatMap((group) =>
    group.rules.map((rule) => ({ where: `rule ${rule.alert ?? rule.record}`, expr: String(rule.expr) })),
  );
}

/** Why `expr` does not fit what the servers export: one line per metric or label it names that none exports. */
function misfits(expr: string, exported: Exported): string[] {
  const { metrics, selectors, grouping } = promql(expr);
  const problems: string[] = [];
  if (metrics.size === 0) problems.push('names no metric');
  /** The labels a series of `name` can carry once scraped; undefined when no such series is exported. */
  const labelsOf = (name: string): Set<string> | undefined => {
    if (Object.hasOwn(PROMETHEUS_SERIES, name)) return new Set([...PROMETHEUS_SERIES[name]!, ...TARGET_LABELS]);
    if (!name.startsWith('rcp_')) return undefined;
    const family = familyOf(name, exported.types);
    if (family === undefined) return undefined;
    const labels = new Set([...exported.labels.get(family)!, ...TARGET_LABELS]);
    if (name === `${family}_bucket`) labels.add('le');
    return labels;
  };
  for (const metric of metrics) {
    if (labelsOf(metric) === undefined) {
      problems.push(
        metric.startsWith('rcp_') || Object.hasOwn(PROMETHEUS_SERIES, metric)
          ? `${metric}: no such metric is exported`
          : `${metric}: not a metric of rcp-server's (rcp_*) nor Prometheus's own`,
      );
    }
  }
  for (const { metric, labels } of selectors) {
    const known = labelsOf(metric);
    if (metric === '') problems.push('a selector without a metric name');
    for (const label of labels) {
      if (known !== undefined && !known.has(label)) problems.push(`${metric}{${label}}: no such label on it`);
    }
  }
  const anywhere = new Set([...metrics].flatMap((metric) => [...(labelsOf(metric) ?? [])]));
  for (const label of grouping) {
    if (!anywhere.has(label)) problems.push(`by/on (${label}): on none of ${[...metrics].join(', ')}`);
  }
  return problems;
}

const exported: Exported = { types: new Map(), labels: new Map() };
let engine: App;
let gateway: App;
beforeAll(async () => {
  engine = createApp(
    testConfig({
      'models.encoder': `${ROOT}/models/use-lite`,
      // One model call per 20 s: the second embed below is refused -32011 (rate_limit), however slow the machine.
      'limits.rateLimit': { reads: 0, writes: 0, models: 0.05 },
    }),
  );
  const origin = await (await engine.buildHttp()).listen({ host: '127.0.0.1', port: 0 });
  const operator = await (await engine.buildOperatorHttp()).listen({ host: '127.0.0.1', port: 0 });
  await engine.corpus?.ready;
  const post = async (id: number, method: string, params: object = {}) =>
    (await fetch(`${origin}/rcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request(id, method, params)),
    }).then((response) => response.json())) as { result?: unknown; error?: { code: number } };
  // Requests that make every labelled series appear: answers of several codes, stages, a model batch, a refusal.
  await post(1, 'initialize', INITIALIZE(1).params as object);
  await post(2, 'ping');
  expect((await post(3, 'embed', { inputs: ['dashboards'] })).error).toBeUndefined();
  expect((await post(4, 'embed', { inputs: ['refused'] })).error?.code).toBe(-32011);
  expect(
    (await post(5, 'index/add', { documents: [{ id: 'd', text: 'alerts and dashboards' }] })).error,
  ).toBeUndefined();
  expect((await post(6, 'retrieve', { query: 'alerts', k: 1 })).error).toBeUndefined();
  expect((await post(7, 'retrieve', { query: 1 })).error?.code).toBe(-32602);
  readExposition(await (await fetch(`${operator}/metrics`)).text(), exported);

  gateway = await createGateway(
    testConfig(),
    [{ id: 'e1', transport: 'http', url: `${origin}/rcp`, weight: 1, required: false, priority: 0, headers: {} }],
    pino({ level: 'silent' }),
  );
  const gatewayOrigin = await (await gateway.buildHttp()).listen({ host: '127.0.0.1', port: 0 });
  readExposition(await (await fetch(`${gatewayOrigin}/metrics`)).text(), exported);

  // A replica over a PostgreSQL store of record: Metrics as the app builds it, with a replica's corpus.
  const models = { observeBatches: () => undefined, queueDepths: () => ({}) } as unknown as Models;
  const replica = { replica: { lagSeconds: 0.25, behind: 1 }, health: () => ({ ready: false }) } as unknown as Corpus;
  readExposition(await new Metrics('0.0.0', models, replica).registry.metrics(), exported);
});
afterAll(async () => {
  await gateway?.close();
  await engine?.close();
});

describe('the Grafana dashboard and the Prometheus alert rules name what the server exports', () => {
  it('the servers export what the checks below rely on', () => {
    for (const name of ['rcp_requests_total', 'rcp_gateway_engine_down', 'rcp_replica_lag_seconds']) {
      expect(exported.types.has(name), name).toBe(true);
    }
    expect([...exported.labels.get('rcp_refused_total')!].sort()).toEqual(['method', 'reason']);
    expect(exported.labels.get('rcp_gateway_engine_down')).toEqual(new Set(['engine']));
  });

  it.each([
    ['docker/grafana/rcp-server.json', dashboardQueries],
    ['docker/prometheus/alerts.yaml', alertQueries],
  ])('every metric and label %s names is exported', (_, queries) => {
    const all = queries();
    expect(all.length).toBeGreaterThan(5);
    const problems = all.flatMap(({ where, expr }) => misfits(expr, exported).map((problem) => `${where}: ${problem}`));
    expect(problems).toEqual([]);
  });

  it('finds what an expression names, and says what is not exported', () => {
    const named = promql(
      'sum by (instance, reason) (rate(rcp_refused_total{method!~"a|b"}[5m])) / on (instance) group_left () ' +
        'sum(rate(rcp_requests_total[$__rate_interval])) > 0.05 and up{job="rcp"} == 0',
    );
    expect([...named.metrics].sort()).toEqual(['rcp_refused_total', 'rcp_requests_total', 'up']);
    expect(named.selectors).toEqual([
      { metric: 'rcp_refused_total', labels: ['method'] },
      { metric: 'up', labels: ['job'] },
    ]);
    expect(named.grouping).toEqual(['instance', 'reason', 'instance']);
    expect(
      misfits('histogram_quantile(0.99, sum by (le) (rate(rcp_request_duration_seconds_bucket[5m])))', exported),
    ).toEqual([]);
    expect(misfits('rate(rcp_request_duration_seconds_total[5m])', exported)).toEqual([
      'rcp_request_duration_seconds_total: no such metric is exported',
    ]);
    expect(misfits('node_memory_MemFree_bytes', exported)).toEqual([
      "node_memory_MemFree_bytes: not a metric of rcp-server's (rcp_*) nor Prometheus's own",
    ]);
    expect(misfits('sum by (stage) (rate(rcp_requests_total{model="x"}[5m]))', exported)).toEqual([
      'rcp_requests_total{model}: no such label on it',
      'by/on (stage): on none of rcp_requests_total',
    ]);
  });
});
