import { describe, expect, it } from 'vitest';
import { advertisedScales, scoreScaleOf } from '../../../src/retrieval/score-scale.js';

describe('§6.1 scoreScale: what a Hit.score is, per pipeline', () => {
  const plain = { reranked: false, recency: false };

  it.each([
    { mode: 'dense', space: 'cosine', scale: 'cosine' },
    { mode: 'dense', space: 'ip', scale: 'dot' },
    { mode: 'sparse', space: 'cosine', scale: 'bm25' },
    { mode: 'hybrid', space: 'cosine', scale: 'unbounded' },
  ] as const)('$mode over a $space index: $scale', ({ mode, space, scale }) => {
    expect(scoreScaleOf({ mode, ...plain }, space)).toBe(scale);
  });

  it('a reranked answer or one aged by recency has no named scale: unbounded', () => {
    expect(scoreScaleOf({ mode: 'dense', reranked: true, recency: false }, 'cosine')).toBe('unbounded');
    expect(scoreScaleOf({ mode: 'sparse', reranked: false, recency: true }, 'cosine')).toBe('unbounded');
  });

  it('advertises the default pipeline as scoreScale and every mode under its vendor name (§6.2)', () => {
    expect(advertisedScales('dense', 'cosine')).toEqual({
      scoreScale: 'cosine',
      'x-rcp-server-scoreScales': { dense: 'cosine', sparse: 'bm25', hybrid: 'unbounded' },
    });
    expect(advertisedScales('hybrid', 'ip')).toMatchObject({ scoreScale: 'unbounded' });
  });
});
