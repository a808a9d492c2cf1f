/**
 * `npm run eval [-- --scifact DIR] [--data DIR] [EVAL FLAGS...]`: retrieval quality on BEIR SciFact through the
 * server's own commands. `rcp-server ingest` puts SciFact's corpus into the data dir (default indexes/scifact;
 * resumable, so a second run only checks what is stored), then `rcp-server eval` runs its training judgements
 * through `retrieve` and prints nDCG@10, Recall@100 and MRR@10; every other flag goes to eval (`--mode sparse`,
 * `--fusion convex`, `--rerank colbert`, `--report FILE`, ...). SciFact comes from `--scifact DIR` or RCP_SCIFACT,
 * else ../shared/data/scifact.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scifactPath } from './scifact.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The value of `flag` in `args`, removed from them with it. */
function take(args: string[], flag: string): string | undefined {
  const at = args.indexOf(flag);
  return at < 0 ? undefined : args.splice(at, 2)[1];
}

const args = process.argv.slice(2);
take(args, '--scifact');
const data = resolve(take(args, '--data') ?? resolve(ROOT, 'indexes/scifact'));

function server(...argv: string[]): void {
  const { status } = spawnSync(process.execPath, [resolve(ROOT, 'bin/rcp-server.js'), ...argv], { stdio: 'inherit' });
  if (status !== 0) process.exit(status ?? 1);
}

server('ingest', '--data', data, scifactPath('corpus.jsonl'));
server(
  'eval',
  '--data',
  data,
  '--queries',
  scifactPath('queries.jsonl'),
  '--qrels',
  scifactPath('qrels/train.tsv'),
  ...args,
);
