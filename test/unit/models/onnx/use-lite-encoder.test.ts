import { cpSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { modelIdentity, readManifest, verifyFiles } from '../../../../src/models/manifest.js';
import { UseLiteEncoder } from '../../../../src/models/onnx/use-lite-encoder.js';
import { SentencePieceTokenizer, type Vocabulary } from '../../../../src/models/tokenizers/sentencepiece.js';
import { golden } from '../../../fixtures/use-lite-golden.js';
import { silentLogger } from '../../../helpers/logger.js';
import { threadNices } from '../../../helpers/threads.js';

const DIR = fileURLToPath(new URL('../../../../models/use-lite', import.meta.url));
const queue = { maxWaitMs: 1, maxBatchTokens: 16_384, maxBatchItems: 64, maxQueuedItems: 1024 };

function maxAbsoluteError(actual: ArrayLike<number>, expected: readonly number[]): number {
  return expected.reduce((worst, value, i) => Math.max(worst, Math.abs(value - (actual[i] ?? NaN))), 0);
}

describe('the default encoder: USE-lite converted from TF.js to ONNX by the build step', () => {
  const manifest = readManifest(DIR);
  const encoder = new UseLiteEncoder(DIR, manifest, { intraOpThreads: 1, log: silentLogger }, queue);
  afterAll(() => encoder.close());

  it('reports ready only once loaded and warmed: one real inference runs before the first call', async () => {
    const fresh = new UseLiteEncoder(DIR, manifest, { intraOpThreads: 1, log: silentLogger }, queue);
    const batches: number[] = [];
    fresh.onBatch = (items) => batches.push(items);
    expect(fresh.health()).toMatchObject({ ready: false });
    await fresh.loaded;
    expect(batches).toEqual([1]);
    expect(fresh.health()).toEqual({ ready: true });
    await fresh.close();
  });

  it('ships a manifest whose sha256 entries match the built files', async () => {
    expect(manifest).toMatchObject({ kind: 'encoder', architecture: 'use-lite', dimension: 512, maxTokens: 128 });
    await expect(verifyFiles(DIR, manifest)).resolves.toBeUndefined();
  });

  it('tokenizes every golden sentence to the golden ids, through the built vocabulary', () => {
    const vocabulary = JSON.parse(readFileSync(`${DIR}/vocab.json`, 'utf8')) as Vocabulary;
    const tokenizer = new SentencePieceTokenizer(vocabulary, { reserved: 6, unknownId: 0 });
    for (const item of golden.items) expect(tokenizer.encode(item.text), item.text).toEqual(item.ids);
  });

  it('reproduces every golden embedding to 1e-5 per component, as one batch', async () => {
    const vectors = await encoder.embed(
      golden.items.map((item) => item.text),
      undefined,
    );
    golden.items.forEach((item, i) => {
      expect(vectors[i]).toHaveLength(512);
      expect(maxAbsoluteError(vectors[i]!, item.embedding), item.text).toBeLessThan(1e-5);
    });
  });

  it('reproduces every golden embedding to 1e-5 one sentence at a time (batching changes nothing)', async () => {
    for (const item of golden.items) {
      const [vector] = await encoder.embed([item.text], undefined);
      expect(maxAbsoluteError(vector!, item.embedding), item.text).toBeLessThan(1e-5);
    }
  });

  it.runIf(process.platform === 'linux')(
    'runs bulk work in a second session at the lower priority, opened on the first bulk call; queries stay in the first (docs/architecture.md §10)',
    async () => {
      const lowered = () => [...threadNices().values()].filter((nice) => nice === 10).length;
      const runtime = { intraOpThreads: 2, backgroundNice: 10, log: silentLogger };
      const lanes = new UseLiteEncoder(DIR, manifest, runtime, queue);
      await lanes.loaded;
      const [item] = golden.items;
      const [query] = await lanes.embed([item!.text], 'query');
      // Warm-up and queries ran: no thread of this process has been lowered yet.
      expect(lowered()).toBe(0);
      const [document] = await lanes.embed([item!.text], 'document');
      // The background worker's thread and the intra-op thread its session started.
      expect(lowered()).toBeGreaterThanOrEqual(2);
      // The same model in both: the same vector, the golden one.
      expect(maxAbsoluteError(document!, item!.embedding)).toBeLessThan(1e-5);
      expect(maxAbsoluteError(query!, item!.embedding)).toBeLessThan(1e-5);
      await lanes.close();
    },
  );

  it('a model file replaced in place after the load is not opened for bulk work: the main session takes it, with a log line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcp-use-lite-'));
    cpSync(DIR, dir, { recursive: true });
    const errors: string[] = [];
    const log = { ...silentLogger, error: (_: object, msg?: string) => void errors.push(msg ?? '') };
    const lanes = new UseLiteEncoder(dir, manifest, { intraOpThreads: 1, backgroundNice: 10, log }, queue);
    await lanes.loaded;
    // Other weights under the same name, swapped in whole (as a rebuild or a fetch in place would).
    const model = join(dir, manifest.files.model);
    const bytes = readFileSync(model);
    // The lowest bit of a byte in the middle of the file: inside the weights, the file still a valid model.
    const middle = bytes.length >> 1;
    bytes[middle] = bytes[middle]! ^ 0x01;
    writeFileSync(`${model}.new`, bytes);
    renameSync(`${model}.new`, model);
    const [item] = golden.items;
    const [query] = await lanes.embed([item!.text], 'query');
    const [document] = await lanes.embed([item!.text], 'document');
    // The main session's model, bit for bit: the writes are embedded by the model the queries are.
    expect(document).toEqual(query);
    expect(errors).toEqual(['model background session failed; bulk work shares the main']);
    await lanes.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('returns unit vectors and truncates past 128 tokens instead of failing', async () => {
    const [long] = await encoder.embed(['retrieval '.repeat(400)], undefined);
    const norm = Math.hypot(...long!);
    expect(norm).toBeCloseTo(1, 5);
  });

  it('exposes contextual token vectors, one row per token, for late interaction', async () => {
    const [matrix] = await encoder.embedTokens([golden.items[0]!.text], undefined);
    expect(matrix!.rows).toBe(golden.items[0]!.ids.length);
    expect(matrix!.data).toHaveLength(matrix!.rows * 512);
  });

  it('has an identity that names the model and digests the weights and the vocabulary', () => {
    expect(encoder.info.identity).toBe(modelIdentity(manifest));
    expect(encoder.info.identity).toMatch(/^google\/universal-sentence-encoder-lite#[0-9a-f]{12}$/);
    const changed = { ...manifest, sha256: { ...manifest.sha256, 'vocab.json': '0'.repeat(64) } };
    expect(modelIdentity(changed)).not.toBe(encoder.info.identity);
  });
});
