/**
 * `npm run bench -- lexical`: first the engines (bench/lexical/engines.ts: our Bm25Index with MaxScore, exhaustive,
 * and before typed postings, beside LanceDB's FTS and MiniSearch, q/s and nDCG@10 as ratios in the same run), then
 * the BM25 analyzer choices on BEIR SciFact (training judgements): nDCG@10 with and without Porter stemming, at two
 * common (k1, b) settings, the first row the baseline of the same run. RCP_BENCH_LEXICAL=engines runs the first only.
 */
import { Bm25Index } from '../src/lexical/bm25.js';
import { benchLexicalEngines } from './lexical/engines.js';
import { corpus, ndcg, recall, trainQueries } from './scifact.js';

export async function benchLexical(): Promise<void> {
  await benchLexicalEngines();
  if (process.env.RCP_BENCH_LEXICAL === 'engines') return;
  const docs = corpus();
  const queries = trainQueries();
  const settings = [
    { name: 'no stemming, k1 0.9 b 0.4', stem: false, k1: 0.9, b: 0.4 },
    { name: 'porter stem, k1 0.9 b 0.4', stem: true, k1: 0.9, b: 0.4 },
    { name: 'no stemming, k1 1.2 b 0.75', stem: false, k1: 1.2, b: 0.75 },
    { name: 'porter stem, k1 1.2 b 0.75', stem: true, k1: 1.2, b: 0.75 },
  ];
  console.log(`BM25 on SciFact (train judgements, ${queries.length} queries, ${docs.length} docs)`);
  let baseline = 0;
  for (const setting of settings) {
    const index = new Bm25Index(setting);
    const started = performance.now();
    docs.forEach((doc, label) => index.add(label, doc.text));
    const built = performance.now() - started;
    let total = 0;
    let recalled = 0;
    for (const query of queries) {
      const ranked = (await index.search(query.text, 100)).map((hit) => docs[hit.label]!.id);
      total += ndcg(ranked, query.relevant);
      recalled += recall(ranked, query.relevant, 100);
    }
    const score = total / queries.length;
    baseline ||= score;
    console.log(
      `  ${setting.name.padEnd(28)} nDCG@10 ${score.toFixed(4)}  ratio ${(score / baseline).toFixed(3)}  ` +
        `recall@100 ${(recalled / queries.length).toFixed(3)}  (index ${built.toFixed(0)} ms)`,
    );
  }
  await Promise.resolve();
}
