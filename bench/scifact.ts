/** BEIR SciFact from ../shared (corpus, queries, training judgements) and the IR metrics the evaluations report. */
import { readFileSync } from 'node:fs';

const DATA = new URL('../../shared/data/scifact/', import.meta.url);

export interface Doc {
  readonly id: string;
  readonly text: string;
}

function jsonl<T>(name: string): T[] {
  return readFileSync(new URL(name, DATA), 'utf8')
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

/** Training judgements: query id → relevant corpus ids, with the query text. */
export function trainQueries(): { id: string; text: string; relevant: Set<string> }[] {
  const texts = new Map(jsonl<{ _id: string; text: string }>('queries.jsonl').map((q) => [q._id, q.text]));
  const relevant = new Map<string, Set<string>>();
  for (const line of readFileSync(new URL('qrels/train.tsv', DATA), 'utf8').split('\n').slice(1)) {
    const [query, doc, score] = line.split('\t');
    if (query === undefined || doc === undefined || Number(score) <= 0) continue;
    relevant.set(query, (relevant.get(query) ?? new Set()).add(doc));
  }
  return [...relevant].map(([id, docs]) => ({ id, text: texts.get(id) ?? '', relevant: docs }));
}

export { ndcg, recall } from '../src/retrieval/metrics.js';
