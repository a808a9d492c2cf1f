/**
 * BEIR SciFact (corpus, queries, training judgements) and the IR metrics the evaluations report. SciFact is not part
 * of the repository: its folder comes from `--scifact DIR` or RCP_SCIFACT, else ../shared/data/scifact.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { outsidePathOrExit, SCIFACT } from '../test/conformance/outside.js';

let folder: string | undefined;

/** A file of SciFact; when there is no SciFact, one line saying so and exit status 2. */
export function scifactPath(name: string): string {
  folder ??= outsidePathOrExit(SCIFACT);
  return join(folder, name);
}

export interface Doc {
  readonly id: string;
  readonly text: string;
}

function jsonl<T>(name: string): T[] {
  return readFileSync(scifactPath(name), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as T);
}

export function corpus(): Doc[] {
  return jsonl<{ _id: string; title: string; text: string }>('corpus.jsonl').map((d) => ({
    id: d._id,
    text: `${d.title} ${d.text}`,
  }));
}

/** Every SciFact query's text, in file order. */
export function queryTexts(): string[] {
  return jsonl<{ text: string }>('queries.jsonl').map((query) => query.text);
}

/** Training judgements: query id → relevant corpus ids, with the query text. */
export function trainQueries(): { id: string; text: string; relevant: Set<string> }[] {
  const texts = new Map(jsonl<{ _id: string; text: string }>('queries.jsonl').map((q) => [q._id, q.text]));
  const relevant = new Map<string, Set<string>>();
  for (const line of readFileSync(scifactPath('qrels/train.tsv'), 'utf8').split('\n').slice(1)) {
    const [query, doc, score] = line.split('\t');
    if (query === undefined || doc === undefined || Number(score) <= 0) continue;
    relevant.set(query, (relevant.get(query) ?? new Set()).add(doc));
  }
  return [...relevant].map(([id, docs]) => ({ id, text: texts.get(id) ?? '', relevant: docs }));
}

export { ndcg, recall } from '../src/retrieval/relevance-metrics.js';
