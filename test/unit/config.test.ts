import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommandLine, parseListen } from '../../src/cli.js';
import { ConfigError, defaultConfig, loadConfig } from '../../src/config.js';

const file = (content: string): string => {
  const path = join(mkdtempSync(join(tmpdir(), 'rcp-config-')), 'config.json');
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
    const path = file(JSON.stringify({ http: { port: 9000, sessions: 'stateless' }, limits: { maxBatchSize: 5 } }));
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
      sessions: 'stateless',
      corsOrigins: ['https://a.example', 'https://b.example'],
    });
    expect(config.limits).toMatchObject({ maxBatchSize: 5, maxBodyBytes: 4096 });
  });

  it('rejects unknown settings, wrong types and unreadable files with a clear message', () => {
    expect(() => loadConfig({ file: file('{"http":{"prot":1}}') })).toThrow(/http: unknown setting 'prot'/);
    expect(() => loadConfig({ env: { RCP_HTTP_PORT: 'eighty' } })).toThrow(/http.port: must be integer/);
    expect(() => loadConfig({ env: { RCP_HTTP_SESSIONS: 'sticky' } })).toThrow(ConfigError);
    expect(() => loadConfig({ file: file('{not json') })).toThrow(/not valid JSON/);
    expect(() => loadConfig({ file: '/no/such/file.json' })).toThrow(/cannot read config file/);
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

  it('rejects what it does not understand', () => {
    expect(() => parseCommandLine(['serve', '--stdio', '--http', '80'])).toThrow(/exclude each other/);
    expect(() => parseCommandLine(['serve', '--bogus'])).toThrow(/bogus/);
    expect(() => parseCommandLine(['launch'])).toThrow(/unknown command/);
    expect(() => parseListen('host:99999')).toThrow(/HOST:\]PORT/);
  });
});
