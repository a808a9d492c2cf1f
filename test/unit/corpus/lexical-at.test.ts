import { describe, expect, it } from 'vitest';
import { Bm25Index } from '../../../src/lexical/bm25.js';
import { VersionHistory } from '../../../src/corpus/snapshots/history.js';
import { LexicalAt } from '../../../src/corpus/snapshots/lexical-at.js';

/**
 * §7.7.1 BM25 at a version (snapshots/lexical-at.ts): the live index's scores while the version is current, bit for
 * bit, and the same after later writes, including a write that lands while a search at the version is under way.
 */
const OPTIONS = { k1: 1.2, b: 0.75, stem: true, fields: { title: 2 } };
const TEXTS: Record<number, string> = {
  1: 'kinase signal in the cell membrane',
  2: 'signal kinase kinase pathway of the tumour',
  3: 'membrane protein and the signal of a neuron',
  4: 'gene expression in the tumour cell',
  5: 'virus entry through the membrane',
  6: 'enzyme kinetics of a kinase',
};
const QUERY = 'kinase signal membrane';

function corpus() {
  const index = new Bm25Index(OPTIONS);
  const history = new VersionHistory(0, 2048);
  for (const [label, text] of Object.entries(TEXTS)) index.add(Number(label), text, { title: `doc ${label}` });
  history.added(Object.keys(TEXTS).map(Number), 1);
  /** Write 2: label 2 replaced by label 7 (other text, other title), label 3 deleted. */
  const write2 = () => {
    history.added([7], 2);
    index.add(7, 'kinase kinase kinase signal', { title: 'kinase' });
    for (const label of [2, 3]) {
      const terms = index.termCounts(label)!;
      history.retire(label, { docId: `d${label}`, ordinal: 0, ...terms, seq: 1, removedSeq: 2 });
      index.remove(label);
    }
  };
  return { index, history, write2 };
}

const at = async (index: Bm25Index, history: VersionHistory, version: number) =>
  (await LexicalAt.open(index, history, version, QUERY)).search(10, undefined);

describe('§7.7.1 BM25 at a version', () => {
  it('equals the live search bit for bit while the version is current, and after a write that changed N, avgdl and df', async () => {
    const { index, history, write2 } = corpus();
    const live1 = await index.search(QUERY, 10);
    const at1 = await at(index, history, 1);
    expect(at1).toEqual([...live1].sort((x, y) => y.score - x.score || x.label - y.label));
    write2();
    expect(await at(index, history, 1)).toEqual(at1);
    const live2 = await index.search(QUERY, 10);
    expect(await at(index, history, 2)).toEqual([...live2].sort((x, y) => y.score - x.score || x.label - y.label));
    expect((await at(index, history, 2)).map((hit) => hit.label)).toContain(7);
    expect((await at(index, history, 1)).map((hit) => hit.label)).not.toContain(7);
  });

  it('a write between the capture and the scan changes nothing of the version it reads', async () => {
    const { index, history, write2 } = corpus();
    const before = await at(index, history, 1);
    const open = await LexicalAt.open(index, history, 1, QUERY);
    write2();
    expect(await open.search(10, undefined)).toEqual(before);
  });

  it('scores of given chunks are the search scores; a chunk not in the version scores 0', async () => {
    const { index, history, write2 } = corpus();
    write2();
    const hits = await at(index, history, 1);
    const scores = await (await LexicalAt.open(index, history, 1, QUERY)).scores([...hits.map((hit) => hit.label), 7]);
    expect(scores).toEqual([...hits.map((hit) => hit.score), 0]);
  });
});
