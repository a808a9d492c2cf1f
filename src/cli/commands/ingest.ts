import type { IngestCommand } from '../../cli.js';
import { DocumentParser } from '../../documents/index.js';
import { ingest, type IngestSummary } from '../../ingest/ingest.js';
import { StartupError } from '../../startup-error.js';
import { openQuietApp } from '../startup.js';

/** `rcp-server ingest`: the app's own corpus and encoder, so documents take exactly the index/add path. */
export async function ingestCommand(command: IngestCommand): Promise<number> {
  const { config, app } = await openQuietApp(command.configFile, command.overrides);
  if (app.corpus === undefined) throw new StartupError('ingest needs an encoder (models.encoder is none)');
  const parser = new DocumentParser({ ...config.content.documents, maxTextBytes: config.index.maxDocumentBytes });
  // Checked whole before anything is written (a server checks it while serving; a write waits for it here).
  await app.corpus.checked;
  try {
    // A store found damaged is a start-up error: nothing in the data dir is changed.
    if (app.corpus.fatal !== undefined) throw new StartupError(app.corpus.fatal);
    const summary = await ingest(
      app.corpus,
      command.paths,
      {
        chunk: command.chunk,
        contextual: command.contextual,
        batchSize: 64,
        partition: command.partition,
        parser,
        limits: {
          maxDocumentBytes: config.index.maxDocumentBytes,
          maxMetadataBytes: config.index.maxMetadataBytes,
          dimension: app.corpus.dimension,
          encoder: app.corpus.encoderIdentity,
          reEmbed: command.reEmbed,
        },
      },
      process.stderr,
    );
    printSummary(summary, config.dataDir);
    return summary.rejectedCount === 0 ? 0 : 1;
  } finally {
    parser.close();
    await app.close();
  }
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
