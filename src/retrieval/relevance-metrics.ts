/** IR metrics with binary relevance, as BEIR reports them. */

/** nDCG@k. */
export function ndcg(ranked: readonly string[], relevant: ReadonlySet<string>, k = 10): number {
  let dcg = 0;
  ranked.slice(0, k).forEach((id, i) => (dcg += relevant.has(id) ? 1 / Math.log2(i + 2) : 0));
  let ideal = 0;
  for (let i = 0; i < Math.min(k, relevant.size); i++) ideal += 1 / Math.log2(i + 2);
  return ideal === 0 ? 0 : dcg / ideal;
}

/** Recall@k. */
export function recall(ranked: readonly string[], relevant: ReadonlySet<string>, k: number): number {
  return relevant.size === 0 ? 0 : ranked.slice(0, k).filter((id) => relevant.has(id)).length / relevant.size;
}

/** MRR@k: the reciprocal rank of the first relevant hit within k. */
export function mrr(ranked: readonly string[], relevant: ReadonlySet<string>, k = 10): number {
  const rank = ranked.slice(0, k).findIndex((id) => relevant.has(id));
  return rank === -1 ? 0 : 1 / (rank + 1);
}
