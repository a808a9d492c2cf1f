import type { CorpusReader } from '../corpus/index.js';

/** The queries recall runs: `query` for dense recall (and the reranker), `lexicalQuery` for BM25. */
export interface RecallQueries {
  readonly query: string;
  readonly lexicalQuery: string;
}

/**
 * §7.8 inside retrieve, off unless asked: `rewrite` recalls with the rewritten query; `multi-query` keeps dense
 * recall on the query as asked and gives lexical recall the query expanded with every expansion term — RM3's
 * use of pseudo-relevance feedback — so fusion still sees one dense and one sparse list. A note in `notes` says
 * what lexical recall ran on (§7.7 usage reflects what the server did).
 */
export async function planQueries(
  corpus: Pick<CorpusReader, 'transformQuery'>,
  asked: string,
  rewrite: string | false | undefined,
  notes: string[],
  signal: AbortSignal,
): Promise<RecallQueries> {
  let queries = [asked];
  if (rewrite === 'rewrite') queries = await corpus.transformQuery(asked, 'rewrite', 1, signal);
  const query = queries[0] ?? asked;
  let lexicalQuery = query;
  if (rewrite === 'multi-query') {
    const expanded = await corpus.transformQuery(asked, 'multi-query', 3, signal);
    const terms = expanded.slice(1).map((q) => q.slice(expanded[0]?.length ?? 0).trim());
    lexicalQuery = [expanded[0] ?? asked, ...terms].join(' ');
    notes.push(`multi-query: lexical recall expanded to ${JSON.stringify(lexicalQuery)}`);
  }
  return { query, lexicalQuery };
}
