import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readManifest } from '../../../src/models/manifest.js';
import { fetchModel, FetchError, type Catalog, type CatalogEntry } from '../../../src/models/model-fetch.js';
import { BertEncoder } from '../../../src/models/onnx/bert.js';
import { writeFixture } from '../../fixtures/bert-models.js';
import { silentLogger } from '../../helpers/logger.js';

/** A local hub over a real socket, serving a generated model at `<repo>/resolve/<revision>/<path>`. */
const ROOT = mkdtempSync(join(tmpdir(), 'rcp-fetch-'));
const PUBLISHED = join(ROOT, 'published');
writeFixture(PUBLISHED, { kind: 'encoder' });
const REVISION = 'a1b2c3d';
const requests: string[] = [];
let server: Server;
let hub: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    requests.push(request.url ?? '');
    const match = /^\/acme\/tiny-bert\/resolve\/([^/]+)\/(.+)$/.exec(request.url ?? '');
    const file = match === null ? undefined : join(PUBLISHED, match[2]!.replace('onnx/', ''));
    if (file === undefined || !existsSync(file)) return response.writeHead(404).end();
    response.end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hub = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.close();
  rmSync(ROOT, { recursive: true, force: true });
});

const digest = (file: string) =>
  createHash('sha256')
    .update(readFileSync(join(PUBLISHED, file)))
    .digest('hex');

function catalog(pins: { revision: string | null; model: string | null; tokenizer: string | null }): Catalog {
  const entry: CatalogEntry = {
    repo: 'acme/tiny-bert',
    revision: pins.revision,
    files: {
      'model.onnx': { path: 'onnx/model.onnx', sha256: pins.model },
      'tokenizer.json': { path: 'tokenizer.json', sha256: pins.tokenizer },
    },
    manifest: {
      kind: 'encoder',
      architecture: 'bert',
      tokenizer: 'huggingface',
      maxTokens: 64,
      dimension: 32,
      pooling: 'mean',
      normalize: true,
    },
  };
  return { models: { 'tiny-bert': entry } };
}

const pinned = () => catalog({ revision: REVISION, model: digest('model.onnx'), tokenizer: digest('tokenizer.json') });

describe('models fetch: pinned revision, sha256-checked, all or nothing', () => {
  it('downloads at the pinned revision, verifies, writes a manifest, and the model then runs', async () => {
    const target = join(ROOT, 'models', 'tiny-bert');
    const manifest = await fetchModel(pinned(), 'tiny-bert', target, { hub, unpinned: false, log: () => undefined });
    expect(requests.filter((url) => url.includes(`/resolve/${REVISION}/`))).toHaveLength(2);
    expect(manifest).toMatchObject({
      identity: `acme/tiny-bert@${REVISION}`,
      sha256: { 'model.onnx': digest('model.onnx') },
    });
    const encoder = new BertEncoder(
      target,
      readManifest(target),
      { intraOpThreads: 1, log: silentLogger },
      {
        maxWaitMs: 0,
        maxBatchTokens: 1024,
        maxBatchItems: 8,
        maxQueuedItems: 8,
      },
    );
    const [vector] = await encoder.embed(['the cell'], undefined);
    expect(vector).toHaveLength(32);
    await encoder.close();
  });

  it('refuses a file whose sha256 differs, leaving no directory and no partial download', async () => {
    const target = join(ROOT, 'tampered', 'tiny-bert');
    const wrong = catalog({ revision: REVISION, model: '0'.repeat(64), tokenizer: digest('tokenizer.json') });
    await expect(
      fetchModel(wrong, 'tiny-bert', target, { hub, unpinned: false, log: () => undefined }),
    ).rejects.toThrow(/sha256 .* does not match/);
    expect(existsSync(target)).toBe(false);
    expect(existsSync(join(ROOT, 'tampered')) ? readdirSync(join(ROOT, 'tampered')) : []).toEqual([]);
  });

  it('refuses an unpinned entry unless --unpinned, which reports the digests to record', async () => {
    const open = catalog({ revision: null, model: null, tokenizer: null });
    const target = join(ROOT, 'unpinned', 'tiny-bert');
    await expect(
      fetchModel(open, 'tiny-bert', target, { hub, unpinned: false, log: () => undefined }),
    ).rejects.toBeInstanceOf(FetchError);
    const lines: string[] = [];
    const manifest = await fetchModel(open, 'tiny-bert', target, {
      hub,
      unpinned: true,
      log: (line) => lines.push(line),
    });
    expect(manifest.identity).toBe('acme/tiny-bert@main');
    expect(lines.join('\n')).toContain(digest('model.onnx'));
  });

  it('names the failing URL when the hub answers 404', async () => {
    await expect(
      fetchModel(pinned(), 'nope', join(ROOT, 'x'), { hub, unpinned: false, log: () => undefined }),
    ).rejects.toThrow(/no model 'nope'/);
    const elsewhere = { models: { 'tiny-bert': { ...pinned().models['tiny-bert']!, repo: 'acme/missing' } } };
    await expect(
      fetchModel(elsewhere, 'tiny-bert', join(ROOT, 'y'), { hub, unpinned: false, log: () => undefined }),
    ).rejects.toThrow(/HTTP 404/);
  });
});
