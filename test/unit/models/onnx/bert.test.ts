import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { modelIdentity, readManifest } from '../../../../src/models/manifest.js';
import { BertCrossEncoder, BertEncoder } from '../../../../src/models/onnx/bert.js';
import { HuggingFaceTokenizer } from '../../../../src/models/tokenizers/huggingface.js';
import { cosineSimilarity } from '../../../../src/protocol/vectors.js';
import { vocabulary, writeFixture } from '../../../fixtures/bert-models.js';
import { silentLogger } from '../../../helpers/logger.js';

const ROOT = mkdtempSync(join(tmpdir(), 'rcp-bert-'));
const runtime = { intraOpThreads: 1, log: silentLogger };
const queue = { maxWaitMs: 1, maxBatchTokens: 4096, maxBatchItems: 64, maxQueuedItems: 256 };
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
  rmSync(ROOT, { recursive: true, force: true });
});

function encoder(name: string, options: Parameters<typeof writeFixture>[1]): BertEncoder {
  const dir = join(ROOT, name);
  writeFixture(dir, options);
  const model = new BertEncoder(dir, readManifest(dir), runtime, queue);
  closers.push(() => model.close());
  return model;
}

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) =>
  Array.from(a).reduce((worst, v, i) => Math.max(worst, Math.abs(v - (b[i] ?? NaN))), 0);

describe('WordPiece through tokenizer.json (@huggingface/tokenizers)', async () => {
  writeFixture(join(ROOT, 'tok'), { kind: 'encoder' });
  const tokenizer = await HuggingFaceTokenizer.load(join(ROOT, 'tok', 'tokenizer.json'));
  const vocab = vocabulary();
  const id = (piece: string) => vocab.indexOf(piece);

  it('lower-cases, splits punctuation and unknown words into ## pieces, and adds [CLS]/[SEP]', () => {
    const { ids, typeIds } = tokenizer.encode('The Cells, zq!', 64);
    expect(ids).toEqual([id('[CLS]'), id('the'), id('cells'), id(','), id('z'), id('##q'), id('!'), id('[SEP]')]);
    expect(typeIds.every((t) => t === 0)).toBe(true);
  });

  it('truncates a single text to the model limit, keeping [SEP] last', () => {
    const { ids } = tokenizer.encode('cancer '.repeat(100), 16);
    expect(ids).toHaveLength(16);
    expect(ids.at(-1)).toBe(id('[SEP]'));
  });

  it('truncates a pair by the passage, never the query, with segment ids 0 then 1', () => {
    const { ids, typeIds } = tokenizer.encodePair('what raises cancer risk', 'the study '.repeat(50), 20);
    expect(ids).toHaveLength(20);
    expect(ids.slice(0, 6)).toEqual([id('[CLS]'), id('what'), id('r'), id('##a'), id('##i'), id('##s')]);
    const firstSep = ids.indexOf(id('[SEP]'));
    expect(typeIds.slice(0, firstSep + 1).every((t) => t === 0)).toBe(true);
    expect(typeIds.slice(firstSep + 1).every((t) => t === 1)).toBe(true);
    expect(ids.at(-1)).toBe(id('[SEP]'));
  });
});

describe('BERT-family encoder on a generated random-weight ONNX graph', () => {
  const mean = encoder('mean', { kind: 'encoder', pooling: 'mean', normalize: true });
  const cls = encoder('cls', { kind: 'encoder', pooling: 'cls', normalize: false });

  it('returns one normalised vector of the manifest dimension per text', async () => {
    const vectors = await mean.embed(['the cell', 'protein levels in blood'], undefined);
    expect(vectors.map((v) => v.length)).toEqual([32, 32]);
    for (const v of vectors) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
  });

  it('pools over real tokens only: padding beside a longer text in the same batch changes nothing', async () => {
    // 4 and 7 tokens: the same length bucket, so one padded batch.
    const alone = await mean.embed(['the cell'], undefined);
    const padded = await mean.embed(['the cell', 'the cell and the protein'], undefined);
    expect(maxDiff(padded[0]!, alone[0]!)).toBeLessThan(1e-5);
    const clsAlone = await cls.embed(['the cell'], undefined);
    const clsPadded = await cls.embed(['the cell', 'the cell and the protein'], undefined);
    expect(maxDiff(clsPadded[0]!, clsAlone[0]!)).toBeLessThan(1e-5);
  });

  it('mean pooling is the average of the token vectors; CLS pooling is the first', async () => {
    const [tokens] = await mean.embedTokens(['protein levels in blood'], undefined);
    const average = new Float32Array(32);
    for (let r = 0; r < tokens!.rows; r++)
      for (let k = 0; k < 32; k++) average[k]! += tokens!.data[r * 32 + k]! / tokens!.rows;
    const norm = Math.hypot(...average);
    const [pooled] = await mean.embed(['protein levels in blood'], undefined);
    expect(
      maxDiff(
        pooled!,
        average.map((v) => v / norm),
      ),
    ).toBeLessThan(1e-5);
    const [clsTokens] = await cls.embedTokens(['protein levels in blood'], undefined);
    const [clsVector] = await cls.embed(['protein levels in blood'], undefined);
    expect(maxDiff(clsVector!, clsTokens!.data.subarray(0, 32))).toBeLessThan(1e-6);
  });

  it('§7.3 kind selects the manifest prefix (e5-style query/passage)', async () => {
    const e5 = encoder('e5', { kind: 'encoder', prefixes: { query: 'query: ', document: 'passage: ' } });
    const [asQuery] = await e5.embed(['cancer risk'], 'query');
    const [prefixedByHand] = await e5.embed(['query: cancer risk'], undefined);
    const [asDocument] = await e5.embed(['cancer risk'], 'document');
    expect(maxDiff(asQuery!, prefixedByHand!)).toBeLessThan(1e-6);
    expect(cosineSimilarity(asQuery!, asDocument!)).toBeLessThan(0.99999);
  });

  it('has an identity that changes with the weights and with the tokenizer, and only then', () => {
    const base = readManifest(join(ROOT, 'mean'));
    writeFixture(join(ROOT, 'same'), { kind: 'encoder', pooling: 'mean', normalize: true });
    writeFixture(join(ROOT, 'reseeded'), { kind: 'encoder', seed: 2 });
    writeFixture(join(ROOT, 'retokenized'), { kind: 'encoder', extraWords: ['colbert'] });
    const identity = modelIdentity(base);
    expect(mean.info.identity).toBe(identity);
    expect(modelIdentity(readManifest(join(ROOT, 'same')))).toBe(identity);
    const reseeded = readManifest(join(ROOT, 'reseeded'));
    expect(modelIdentity({ ...reseeded, identity: base.identity })).not.toBe(identity);
    expect(modelIdentity(readManifest(join(ROOT, 'retokenized')))).not.toBe(identity);
  });
});

describe('BERT-family cross-encoder on a generated random-weight ONNX graph', () => {
  const dir = join(ROOT, 'cross');
  writeFixture(dir, { kind: 'cross-encoder', maxTokens: 24 });
  const model = new BertCrossEncoder(dir, readManifest(dir), runtime, queue);
  closers.push(() => model.close());

  it('scores each (query, passage) pair the same alone as in a batch', async () => {
    const passages = ['the cancer risk', 'a mouse model of disease', 'vitamin dose'];
    const together = await model.score('cancer risk', passages);
    const alone = await Promise.all(passages.map(async (p) => (await model.score('cancer risk', [p]))[0]!));
    expect(maxDiff(together, alone)).toBeLessThan(1e-5);
    expect(new Set(together).size).toBe(3);
  });

  it('scores a passage far past maxTokens (truncated, not failed)', async () => {
    const [score] = await model.score('cancer risk', ['the study of cancer '.repeat(200)]);
    expect(Number.isFinite(score)).toBe(true);
  });
});
