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

/** nDCG@k with binary gains. */
export function ndcg(ranked: readonly string[], relevant: ReadonlySet<string>, k = 10): number {
  let dcg = 0;
  ranked.slice(0, k).forEach((id, i) => (dcg += relevant.has(id) ? 1 / Math.log2(i + 2) : 0));
  let ideal = 0;
  for (let i = 0; i < Math.min(k, relevant.size); i++) ideal += 1 / Math.log2(i + 2);
  return ideal === 0 ? 0 : dcg / ideal;
}

export function recall(ranked: readonly string[], relevant: ReadonlySet<string>, k: number): number {
  return ranked.slice(0, k).filter((id) => relevant.has(id)).length / relevant.size;
}
