/**
 * Ingest rate by default-encoder build: SciFact abstracts ingested (index/add path: encoder in its worker thread,
 * batching queue, store, indexes) and embedded alone (the encoder's `embed` in ingest-sized batches), for two or more
 * model directories open side by side and measured interleaved batch by batch, ratios to the first.
 *
 *   npm run bench -- ingest        the op-by-op conversion at onnxruntime's own threads (the server's default before
 *                                  converter v2 and the thread choice of models.ts), against the default encoder
 *                                  and its int8 build at the server's default threads
 *   node --import tsx bench/encoder-ingest.ts OLD_DIR NEW_DIR...
 *
 * A directory built before converter v2 (sparse input) works as well as a current one. `DIR,threads=N` sets that
 * build's intra-op threads (else RCP_INTRA_OP_THREADS, default 0: one per core, as the server); `threads=ort` leaves
 * the choice to onnxruntime. RCP_BENCH_DOCS (default 512).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Corpus } from '../src/corpus/corpus.js';
import { readManifest } from '../src/models/manifest.js';
import { buildDefaultModel } from '../src/models/onnx/default-model.js';
import { UseLiteEncoder } from '../src/models/onnx/use-lite-encoder.js';
import { intraOpThreads } from '../src/models/models.js';
import { ingest } from '../src/ingest/ingest.js';
import { corpus as scifact } from './scifact.js';
import { benchCorpusSettings } from './settings.js';

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
const queue = { maxWaitMs: 0, maxBatchTokens: 1 << 16, maxBatchItems: 64, maxQueuedItems: 1 << 16 };

const CHUNK = 64;

interface Subject {
  readonly dir: string;
  readonly encoder: UseLiteEncoder;
  readonly corpus: Corpus;
  readonly work: string;
  embedSeconds: number;
  ingestSeconds: number;
  added: number;
}

async function open(spec: string, first: readonly string[]): Promise<Subject> {
  const [dir = '', setting] = spec.split(',threads=');
  // 0 reaches onnxruntime as "choose for yourself".
  const threads = setting === 'ort' ? 0 : intraOpThreads(Number(setting ?? process.env.RCP_INTRA_OP_THREADS ?? 0));
  const encoder = new UseLiteEncoder(dir, readManifest(dir), { intraOpThreads: threads, log: silent }, queue);
  await encoder.loaded;
  await encoder.embed(first, 'document'); // a full-size batch: onnxruntime sizes its arenas on the first one
  const work = mkdtempSync(join(tmpdir(), 'rcp-bench-encoder-ingest-'));
  const corpus = new Corpus(benchCorpusSettings(work), encoder, silent);
  await corpus.ready;
  return { dir: spec, encoder, corpus, work, embedSeconds: 0, ingestSeconds: 0, added: 0 };
}

export async function benchEncoderIngest(dirs: readonly string[]): Promise<void> {
  const count = Number(process.env.RCP_BENCH_DOCS ?? 512);
  const docs = scifact().slice(0, count - (count % CHUNK));
  const texts = docs.map((doc) => doc.text);
  const scratch = mkdtempSync(join(tmpdir(), 'rcp-bench-encoder-source-'));
  const sources: string[] = [];
  for (let at = 0; at < docs.length; at += CHUNK) {
    const source = join(scratch, `part-${at}.jsonl`);
    const part = docs.slice(at, at + CHUNK);
    writeFileSync(source, part.map((doc) => JSON.stringify({ _id: doc.id, text: doc.text })).join('\n'));
    sources.push(source);
  }
  const subjects: Subject[] = [];
  for (const dir of dirs) subjects.push(await open(dir, texts.slice(0, CHUNK)));
  const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
  // Batch by batch, the order rotating, so load that comes and goes on a shared machine falls on every build alike:
  // the encoder alone on a batch of 64, then the ingest path on another 64 documents into that build's own corpus.
  for (const [n, source] of sources.entries()) {
    for (let j = 0; j < subjects.length; j++) {
      const subject = subjects[(n + j) % subjects.length]!;
      const started = performance.now();
      await subject.encoder.embed(texts.slice(n * CHUNK, (n + 1) * CHUNK), 'document');
      subject.embedSeconds += (performance.now() - started) / 1000;
      const summary = await ingest(
        subject.corpus,
        [source],
        { chunk: false, contextual: false, batchSize: CHUNK },
        quiet,
      );
      subject.ingestSeconds += summary.seconds;
      subject.added += summary.added;
    }
  }
  console.log(`${docs.length} SciFact abstracts, builds interleaved batch by batch (ratios to the first)`);
  const [base] = subjects;
  for (const subject of subjects) {
    const embed = docs.length / subject.embedSeconds;
    const rate = subject.added / subject.ingestSeconds;
    console.log(
      `  embed ${embed.toFixed(1).padStart(6)} docs/s (${(embed / (docs.length / base!.embedSeconds)).toFixed(2)}×)  ` +
        `ingest ${rate.toFixed(1).padStart(6)} docs/s (${(rate / (base!.added / base!.ingestSeconds)).toFixed(2)}×)  ` +
        subject.dir,
    );
    await subject.corpus.close();
    await subject.encoder.close();
    rmSync(subject.work, { recursive: true, force: true });
  }
  rmSync(scratch, { recursive: true, force: true });
}

/** The `ingest` suite: the op-by-op conversion built into a temporary folder as the baseline. */
export async function benchIngest(): Promise<void> {
  const models = fileURLToPath(new URL('../models/', import.meta.url));
  const reference = mkdtempSync(join(tmpdir(), 'rcp-bench-op-by-op-'));
  try {
    await buildDefaultModel(reference, { graph: 'op-by-op' });
    await buildDefaultModel(join(models, 'use-lite-int8'), { quantize: 'int8' });
    console.log(
      "\ningest: the op-by-op conversion at onnxruntime's own threads, then the default encoder and its int8 build",
    );
    await benchEncoderIngest([`${reference},threads=ort`, join(models, 'use-lite'), join(models, 'use-lite-int8')]);
  } finally {
    rmSync(reference, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchEncoderIngest(process.argv.slice(2));
}
