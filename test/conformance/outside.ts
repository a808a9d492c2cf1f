import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Material from outside the repository (the normative schema, SciFact): `npm test` never reads it; the conformance
 * suite, the evaluation and the benchmarks take its path from a flag or an environment variable, and default to the
 * copy in `../shared` beside the repository when there is one.
 */
export interface Outside {
  /** What it is, for the one line that says it is missing. */
  readonly what: string;
  readonly env: string;
  /** A command-line flag that gives it too, for the scripts that parse their own (not vitest's). */
  readonly flag?: string;
  /** Its path under ../shared. */
  readonly shared: string;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export const SCHEMA: Outside = {
  what: 'the normative RCP/1 JSON Schema (rcp-1.0.json)',
  env: 'RCP_SCHEMA',
  shared: 'rcp/schema/rcp-1.0.json',
};

export const SCIFACT: Outside = {
  what: 'BEIR SciFact (a folder with corpus.jsonl, queries.jsonl, qrels/train.tsv)',
  env: 'RCP_SCIFACT',
  flag: '--scifact',
  shared: 'data/scifact',
};

export class MissingOutside extends Error {
  override name = 'MissingOutside';
}

/** The path given by `--flag PATH` in `argv`, else by the environment, else ../shared's copy; throws when none exists. */
export function outsidePath(outside: Outside, argv: readonly string[] = process.argv): string {
  const at = outside.flag === undefined ? -1 : argv.indexOf(outside.flag);
  const given = (at >= 0 ? argv[at + 1] : undefined) ?? process.env[outside.env];
  const path = resolve(ROOT, given ?? resolve(ROOT, '..', 'shared', outside.shared));
  if (existsSync(path)) return path;
  const where =
    given === undefined ? `none given and ../shared/${outside.shared} is not there` : `${path} does not exist`;
  const how = outside.flag === undefined ? `${outside.env}=PATH` : `${outside.env}=PATH or ${outside.flag} PATH`;
  throw new MissingOutside(`missing ${outside.what}: ${where}; give its path with ${how}`);
}

/** For a command line: the path, or one line on stderr naming what is missing and exit status 2. */
export function outsidePathOrExit(outside: Outside, argv: readonly string[] = process.argv): string {
  try {
    return outsidePath(outside, argv);
  } catch (error) {
    if (!(error instanceof MissingOutside)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
}
