import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { golden } from '../fixtures/use-lite-golden.js';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { ROOT } from '../helpers/wire.js';

const texts = golden.items.map((item) => item.text);

function cli(args: readonly string[], env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, ['bin/rcp-server.js', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
}

async function rpc(origin: string, method: string, params: object): Promise<Record<string, unknown>> {
  const response = await fetch(`${origin}/rcp/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await response.json()) as Record<string, unknown>;
}

describe('the int8 variant of the default encoder (models.encoder use-lite-int8)', () => {
  const work = mkdtempSync(join(tmpdir(), 'rcp-int8-'));
  const models = join(work, 'models');
  let server: ServerProcess;
  beforeAll(async () => {
    // An empty models dir: serve builds the configured built-in encoder itself, as it does the default one.
    server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', join(work, 'data')], {
      RCP_MODELS_DIR: models,
      RCP_MODELS_ENCODER: 'use-lite-int8',
    });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('is built at start, advertised under its own identity (§7.3), and embeds close to the float encoder', async () => {
    const init = await rpc(server.origin, 'initialize', { protocolVersion: 1, client: { name: 't' } });
    const { embed } = (init.result as { capabilities: { embed: { identity: string } } }).capabilities;
    expect(embed.identity).toMatch(/^google\/universal-sentence-encoder-lite-int8#[0-9a-f]{12}$/);
    const frame = await rpc(server.origin, 'embed', { inputs: texts });
    const vectors = (frame.result as { vectors: number[][] }).vectors;
    golden.items.forEach((item, i) => {
      const cosine = item.embedding.reduce((sum, v, k) => sum + v * vectors[i]![k]!, 0);
      expect(cosine, item.text).toBeGreaterThan(0.99);
      expect(cosine, `${item.text}: not the float encoder's vector`).toBeLessThan(1 - 1e-7);
    });
  });

  it('`models build use-lite-int8 --dir DIR` builds it, a no-op the second time; an unknown name exits 2', () => {
    const dir = join(work, 'built');
    const first = cli(['models', 'build', 'use-lite-int8', '--dir', dir]);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stderr).toContain(`built ${dir}`);
    expect((JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { identity: string }).identity).toBe(
      'google/universal-sentence-encoder-lite-int8',
    );
    expect(cli(['models', 'build', 'use-lite-int8', '--dir', dir]).stderr).toContain('is up to date');
    const unknown = cli(['models', 'build', 'bge-small-en-v1.5', '--dir', dir]);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("models build builds use-lite or use-lite-int8, not 'bge-small-en-v1.5'");
  });
});
