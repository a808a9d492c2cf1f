import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseCommandLine, parseListen } from '../../src/cli.js';
import {
  ConfigSchema,
  DERIVED_ENVIRONMENT,
  defaultConfig,
  loadConfig,
  unknownEnvironment,
  validateConfig,
} from '../../src/config/index.js';

const file = (content: string, name = 'config.json'): string => {
  const path = join(mkdtempSync(join(tmpdir(), 'rcp-config-')), name);
  writeFileSync(path, content);
  return path;
};

describe('configuration', () => {
  it('defaults: HTTP on 127.0.0.1:8080 at /rcp, data in ./indexes/default', () => {
    expect(loadConfig()).toEqual(defaultConfig());
    expect(defaultConfig()).toMatchObject({
      dataDir: './indexes/default',
      http: { host: '127.0.0.1', port: 8080, base: '/rcp' },
    });
  });

  it('precedence: file < RCP_* environment < command-line overrides', () => {
    const path = file(JSON.stringify({ http: { port: 9000, maxSessionsPerCaller: 7 }, limits: { maxBatchSize: 5 } }));
    const config = loadConfig({
      file: path,
      env: {
        RCP_HTTP_PORT: '9100',
        RCP_MAX_BODY_BYTES: '4096',
        RCP_CORS_ORIGINS: 'https://a.example, https://b.example',
      },
      overrides: { 'http.port': 9200 },
    });
    expect(config.http).toMatchObject({
      port: 9200,
      maxSessionsPerCaller: 7,
      corsOrigins: ['https://a.example', 'https://b.example'],
    });
    expect(config.limits).toMatchObject({ maxBatchSize: 5, maxBodyBytes: 4096 });
  });

  it('rejects unknown settings, wrong types and unreadable files with a clear message', () => {
    expect(() => loadConfig({ file: file('{"http":{"prot":1}}') })).toThrow(/http: unknown setting 'prot'/);
    expect(() => loadConfig({ env: { RCP_HTTP_PORT: 'eighty' } })).toThrow(/http.port: must be integer/);
    expect(() => loadConfig({ env: { RCP_TRUST_PROXY: 'true' } })).toThrow(/http.trustProxy: must be array/);
    expect(() => loadConfig({ env: { RCP_TRUST_PROXY: '10.0.0.0/0' } })).toThrow(/'10.0.0.0\/0' is not an address/);
    expect(() => loadConfig({ env: { RCP_TRUST_PROXY: '10.0.0.300' } })).toThrow(/is not an address/);
    // Node would refuse to listen with a bare ERR_OUT_OF_RANGE: the settings are named instead.
    expect(() => loadConfig({ env: { RCP_HTTP_BODY_TIMEOUT_MS: '1500' } })).toThrow(
      /http.bodyTimeoutMs \(1500\) must be at least http.headersTimeoutMs \(10000\)/,
    );
    expect(
      loadConfig({ env: { RCP_TRUST_PROXY: '10.0.0.0/8, ::1, fd00::/8, loopback' } }).http.trustProxy,
    ).toHaveLength(4);
    expect(
      unknownEnvironment({ RCP_LIMITS_RATE_LIMIT: '5', RCP_RATE_LIMIT: '5', RCP_HTTP_PORT: '1', HOME: '/' }),
    ).toEqual(['RCP_LIMITS_RATE_LIMIT']);
    expect(() => loadConfig({ file: file('{not json') })).toThrow(/not valid JSON/);
    expect(() => loadConfig({ file: '/no/such/file.json' })).toThrow(/cannot read config file/);
  });
});

describe('configuration files in YAML, and a variable for every setting', () => {
  it('reads a .yaml file like its JSON twin', () => {
    const yaml = file(
      [
        'http:',
        '  port: 9300',
        'limits:',
        '  rateLimit: { reads: 5, writes: 1, models: 2 }',
        'redis:',
        '  url: redis://cache:6379',
      ].join('\n'),
      'rcp.yaml',
    );
    const config = loadConfig({ file: yaml });
    expect(config.http.port).toBe(9300);
    expect(config.limits.rateLimit).toEqual({ reads: 5, writes: 1, models: 2 });
    expect(config.redis.url).toBe('redis://cache:6379');
    expect(() => loadConfig({ file: file('http: [unclosed', 'bad.yml') })).toThrow(/is not valid YAML/);
    expect(() => loadConfig({ file: file('- a list', 'list.yaml') })).toThrow(/not a YAML mapping/);
    expect(() => loadConfig({ file: file('http:\n  prot: 1', 'typo.yaml') })).toThrow(/unknown setting 'prot'/);
  });

  it('derives RCP_<PATH> for every setting, typed by the schema; the short aliases win', () => {
    const leaves = (node: object, prefix = ''): string[] =>
      Object.entries(node).flatMap(([key, value]) =>
        typeof value === 'object' && value !== null && !Array.isArray(value) && !['fields', 'trust'].includes(key)
          ? leaves(value as object, `${prefix}${key}.`)
          : [`${prefix}${key}`],
      );
    const settings = leaves(defaultConfig());
    const derived = Object.values(DERIVED_ENVIRONMENT).map((setting) => setting.path);
    expect(derived.sort()).toEqual(settings.sort());
    const config = loadConfig({
      env: {
        RCP_RETRIEVE_FUSION_RRF_K: '42',
        RCP_LIMITS_SHEDDING_MAX_EVENT_LOOP_DELAY_MS: '250',
        RCP_LOG_BODIES: 'true',
        RCP_LOG_REDACT: 'params.query, params.inputs',
        RCP_HTTP_TRUST_PROXY: '10.0.0.0/8, loopback',
        RCP_INDEX_FIELDS: '{"year":"int"}',
        RCP_HTTP_PORT: '9400',
        RCP_HTTP_HOST: '0.0.0.0',
        RCP_REDIS_URL: 'redis://r:6379',
      },
    });
    expect(config.retrieve.fusion.rrfK).toBe(42);
    expect(config.limits.shedding.maxEventLoopDelayMs).toBe(250);
    expect(config.log).toMatchObject({ bodies: true, redact: ['params.query', 'params.inputs'] });
    expect(config.http).toMatchObject({ trustProxy: ['10.0.0.0/8', 'loopback'], port: 9400, host: '0.0.0.0' });
    expect(config.index.fields).toEqual({ year: 'int' });
    expect(config.redis.url).toBe('redis://r:6379');
    expect(
      loadConfig({ env: { RCP_LIMITS_MAX_BODY_BYTES: '2048', RCP_MAX_BODY_BYTES: '4096' } }).limits.maxBodyBytes,
    ).toBe(4096);
    expect(() => loadConfig({ env: { RCP_LOG_BODIES: 'yes' } })).toThrow(/log.bodies: must be boolean/);
    // One parser per type, aliases included: any case of true/false/1/0, never a silent false.
    for (const [name, path] of [
      ['RCP_INDEX_WRITABLE', 'index.writable'],
      ['RCP_INDEX_BM25_STEM', 'index.bm25.stem'],
      ['RCP_COLBERT', 'models.colbert'],
      ['RCP_ALLOW_UNAUTHENTICATED', 'auth.allowUnauthenticated'],
    ] as const) {
      const valueOf = (raw: string) =>
        path
          .split('.')
          .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], loadConfig({ env: { [name]: raw } }));
      expect([valueOf('TRUE'), valueOf('True'), valueOf('1'), valueOf('FALSE'), valueOf('0')]).toEqual([
        true,
        true,
        true,
        false,
        false,
      ]);
      expect(() => loadConfig({ env: { [name]: 'yes' } })).toThrow(new RegExp(`${path}: must be boolean`));
    }
    expect(() => loadConfig({ env: { RCP_REDIS_URL: 'http://r' } })).toThrow(/redis.url/);
  });
});

describe('command line', () => {
  it('serve defaults to HTTP; --stdio, --http [HOST:]PORT, --data and --config are parsed', () => {
    expect(parseCommandLine(['serve'])).toMatchObject({ command: 'serve', transport: { kind: 'http' }, overrides: {} });
    expect(parseCommandLine(['serve', '--stdio', '--data', '/d', '--config', 'c.json'])).toMatchObject({
      transport: { kind: 'stdio' },
      configFile: 'c.json',
      overrides: { dataDir: '/d' },
    });
    expect(parseCommandLine(['serve', '--http', '0.0.0.0:9000'])).toHaveProperty('overrides', {
      'http.host': '0.0.0.0',
      'http.port': 9000,
    });
    expect(parseListen('8081')).toEqual({ 'http.port': 8081 });
    expect(parseListen('[::1]:8081')).toEqual({ 'http.host': '::1', 'http.port': 8081 });
  });

  it('backup --to FILE and restore FILE take --data and --config; each refuses the other form', () => {
    expect(parseCommandLine(['backup', '--to', 'b.tar', '--data', '/d'])).toEqual({
      command: 'backup',
      file: 'b.tar',
      configFile: undefined,
      overrides: { dataDir: '/d' },
    });
    expect(parseCommandLine(['restore', 'b.tar', '--config', 'c.yaml'])).toEqual({
      command: 'restore',
      file: 'b.tar',
      configFile: 'c.yaml',
      overrides: {},
    });
    expect(() => parseCommandLine(['backup', 'b.tar'])).toThrow(/Unexpected argument/);
    expect(() => parseCommandLine(['backup'])).toThrow(/backup needs --to FILE/);
    expect(() => parseCommandLine(['restore', '--to', 'b.tar'])).toThrow(/restore takes FILE, not --to/);
    expect(() => parseCommandLine(['restore', 'a.tar', 'b.tar'])).toThrow(/restore needs one FILE/);
  });

  it('ingest --partition K/N counts K from 1; anything else is a usage error', () => {
    expect(parseCommandLine(['ingest', '--partition', '2/3', 'a.jsonl'])).toMatchObject({
      partition: { index: 1, count: 3 },
    });
    expect(parseCommandLine(['ingest', 'a.jsonl'])).toMatchObject({ partition: undefined });
    for (const bad of ['0/2', '3/2', '1/0', 'x/2', '1/2/3', '1/2000']) {
      expect(() => parseCommandLine(['ingest', '--partition', bad, 'a.jsonl'])).toThrow(/--partition expects K\/N/);
    }
  });

  it('corpus create|drop NAME and corpus list take --data ROOT (docs/tenants.md); serve and mcp take --corpus', () => {
    expect(parseCommandLine(['corpus', 'create', 'acme', '--data', '/r'])).toEqual({
      command: 'corpus',
      action: 'create',
      name: 'acme',
      configFile: undefined,
      root: '/r',
    });
    expect(parseCommandLine(['corpus', 'list'])).toMatchObject({ action: 'list', name: undefined, root: undefined });
    expect(parseCommandLine(['corpus', 'list', '--store', 'postgres://h/db'])).toMatchObject({
      store: 'postgres://h/db',
    });
    for (const bad of [['corpus'], ['corpus', 'create'], ['corpus', 'list', 'x'], ['corpus', 'rename', 'a']]) {
      expect(() => parseCommandLine(bad)).toThrow(/corpus expects create NAME, drop NAME or list/);
    }
    expect(parseCommandLine(['serve', '--stdio', '--corpora', '/r', '--corpus', 'acme'])).toMatchObject({
      corpus: 'acme',
      overrides: { 'corpora.root': '/r' },
    });
    expect(parseCommandLine(['mcp', '--corpora', '/r', '--corpus', 'acme'])).toMatchObject({
      corpus: 'acme',
      overrides: { 'corpora.root': '/r' },
    });
    expect(() => parseCommandLine(['mcp', '--corpus', 'a', '--registry', 'r.json'])).toThrow(/exclude --registry/);
    expect(() => parseCommandLine(['serve', '--corpora', '/r', '--corpus', 'a'])).toThrow(/over HTTP, --corpora ROOT/);
    expect(parseCommandLine(['serve', '--stdio', '--corpora', '/r', '--corpus', 'a'])).toMatchObject({ corpus: 'a' });
  });

  it('named corpora over a store of record: corpora.root beside store.url is accepted (the root holds replicas)', () => {
    const config = { ...defaultConfig(), corpora: { ...defaultConfig().corpora, root: '/r' } };
    const both = validateConfig({ ...config, store: { url: 'postgres://h/db', pollMs: 1000 } });
    expect(both.corpora.root).toBe('/r');
    expect(both.store.url).toBe('postgres://h/db');
  });

  it('an API key names the corpora it may use: names, prefixes ending in *, or *', () => {
    const keys = (corpora: unknown) => ({
      ...defaultConfig(),
      auth: { apiKeys: [{ key: 'k'.repeat(16), scopes: ['read'], corpora }], allowUnauthenticated: false },
    });
    expect(validateConfig(keys(['acme', 'beta-*', '*'])).auth.apiKeys[0]?.corpora).toEqual(['acme', 'beta-*', '*']);
    for (const bad of [[], ['Acme'], ['a*b'], ['../x'], ['a/b'], ['*x']]) {
      expect(() => validateConfig(keys(bad))).toThrow(/auth.apiKeys/);
    }
  });

  it('rejects what it does not understand', () => {
    expect(() => parseCommandLine(['serve', '--stdio', '--http', '80'])).toThrow(/exclude each other/);
    expect(() => parseCommandLine(['serve', '--bogus'])).toThrow(/bogus/);
    expect(() => parseCommandLine(['launch'])).toThrow(/unknown command/);
    expect(() => parseListen('host:99999')).toThrow(/HOST:\]PORT/);
  });
});

describe('defaults declared once, in ConfigSchema', () => {
  const fixture = (): Record<string, unknown> => {
    // Taken from defaultConfig() before the defaults moved into the schema; its $comment says how.
    const text = readFileSync(new URL('../fixtures/config-defaults.json', import.meta.url), 'utf8');
    const { $comment, ...defaults } = JSON.parse(text) as { $comment: string; server: object; models: object };
    expect($comment).toMatch(/defaultConfig\(\)/);
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    // The two defaults computed at run time: the package's version, and its models directory (an absolute path).
    defaults.server = { ...defaults.server, version };
    defaults.models = { ...defaults.models, dir: fileURLToPath(new URL('../../models', import.meta.url)) };
    return defaults;
  };

  it('defaultConfig() is exactly what it was when the defaults were written out by hand', () => {
    expect(defaultConfig()).toStrictEqual(fixture());
  });

  it('each call is a fresh copy: a caller that changes one changes no other', () => {
    const first = defaultConfig();
    first.log.redact.push('changed');
    first.http.port = 1;
    first.index.fields.year = 'int';
    expect(defaultConfig()).toStrictEqual(fixture());
  });

  it('every setting and section has a default and a description, and the defaults are valid', () => {
    const missing: string[] = [];
    const visit = (node: Record<string, unknown>, path: string): void => {
      if (!('default' in node)) missing.push(`${path}: default`);
      if (typeof node.description !== 'string' && path !== '(root)') missing.push(`${path}: description`);
      const properties = node.properties as Record<string, Record<string, unknown>> | undefined;
      if (node.type !== 'object' || properties === undefined) return;
      for (const [key, child] of Object.entries(properties)) visit(child, path === '(root)' ? key : `${path}.${key}`);
    };
    visit(ConfigSchema, '(root)');
    expect(missing).toEqual([]);
    expect(validateConfig(defaultConfig())).toStrictEqual(defaultConfig());
  });
});
