import type { IngestCommand } from '../../cli.js';
import { parserLimitsOf } from '../../config/index.js';
import { DocumentParser } from '../../documents/index.js';
import { ingest, type IngestSummary } from '../../ingest/ingest.js';
import { scanSources, watchSources } from '../../ingest/watch.js';
import { StartupError } from '../../startup-error.js';
import { openQuietApp } from '../startup.js';

/**
 * `rcp-server ingest`: the app's own corpus and encoder, so documents take exactly the index/add path. With
 * `--watch`, the folders are then kept in step (ingest/watch.ts) until SIGINT or SIGTERM.
 */
export async function ingestCommand(command: IngestCommand): Promise<number> {
  const { config, app } = await openQuietApp(command.configFile, command.overrides);
  if (app.corpus === undefined) throw new StartupError('ingest needs an encoder (models.encoder is none)');
  const corpus = app.corpus;
  const parser = new DocumentParser(parserLimitsOf(config));
  // Checked whole before anything is written (a server checks it while serving; a write waits for it here).
  await corpus.checked;
  try {
    // A store found damaged is a start-up error: nothing in the data dir is changed.
    if (corpus.fatal !== undefined) throw new StartupError(corpus.fatal);
    const options = {
      chunk: command.chunk,
      contextual: command.contextual,
      batchSize: 64,
      partition: command.partition,
      parser,
      limits: {
        maxDocumentBytes: config.index.maxDocumentBytes,
        maxMetadataBytes: config.index.maxMetadataBytes,
        dimension: corpus.dimension,
        encoder: corpus.encoderIdentity,
        reEmbed: command.reEmbed,
      },
    };
    const baseline = command.watchMs === undefined ? undefined : (await scanSources(command.paths)).files;
    const summary = await ingest(corpus, command.paths, options, process.stderr);
    printSummary(summary, config.dataDir);
    if (baseline === undefined) return summary.rejectedCount === 0 ? 0 : 1;
    const stop = stopSignal();
    process.stderr.write(`watch: watching ${command.paths.join(', ')} every ${command.watchMs} ms; Ctrl-C stops\n`);
    const intervalMs = command.watchMs!;
    const watched = await watchSources(
      corpus,
      baseline,
      { ...options, paths: command.paths, intervalMs, signal: stop },
      process.stderr,
    );
    process.stdout.write(`watch: ${watched.added} written, ${watched.deleted} deleted, ${watched.rejected} rejected\n`);
    return 0;
  } finally {
    parser.close();
    await app.close();
  }
}

/** Aborts on the first SIGINT or SIGTERM: the watch ends once the changes in hand are written. */
function stopSignal(): AbortSignal {
  const controller = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => controller.abort());
  return controller.signal;
}

function printSummary(summary: IngestSummary, dataDir: string): void {
  const rate = summary.added / Math.max(summary.seconds, 1e-3);
  process.stdout.write(
    `ingested ${summary.added} documents (${summary.chunks} chunks) into ${dataDir} in ${summary.seconds.toFixed(1)} s ` +
      `(${rate.toFixed(1)} docs/s); ${summary.unchanged} unchanged, ${summary.rejectedCount} rejected\n`,
  );
  if (summary.elsewhere > 0) process.stdout.write(`  ${summary.elsewhere} documents left to other partitions\n`);
  const skipped = Object.entries(summary.skipped).sort((a, b) => b[1] - a[1]);
  if (skipped.length > 0) {
    const count = skipped.reduce((sum, [, n]) => sum + n, 0);
    const kinds = skipped.map(([extension, n]) => `${extension} ${n}`).join(', ');
    process.stdout.write(`  skipped ${count} file${count === 1 ? '' : 's'} of no format read here (${kinds})\n`);
  }
  for (const { origin, reason } of summary.rejected) process.stdout.write(`  rejected ${origin}: ${reason}\n`);
  const unlisted = summary.rejectedCount - summary.rejected.length;
  if (unlisted > 0)
    process.stdout.write(`  … and ${unlisted} more rejected (only the first ${summary.rejected.length} listed)\n`);
}
