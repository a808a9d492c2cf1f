import { describe, expect, it } from 'vitest';
import { SessionDedup } from '../../../src/retrieval/session-dedup.js';
import { rememberReturned, seenBefore, skipSeen } from '../../../src/retrieval/session-skip.js';
import { labels, scored } from './fake-corpus.js';

const idOf = (label: number) => `doc#${label}`;

describe('§7.7.3 session dedup in the pipeline', () => {
  it.each([
    { returned: [], ranking: [1, 2, 3], kept: [1, 2, 3] },
    { returned: ['doc#2'], ranking: [1, 2, 3], kept: [1, 3] },
    { returned: ['doc#1', 'doc#2', 'doc#3'], ranking: [1, 2, 3], kept: [] },
    { returned: ['other#9'], ranking: [1, 2, 3], kept: [1, 2, 3] },
  ])('after returning $returned, a ranking of $ranking keeps $kept', async ({ returned, ranking, kept }) => {
    const sessions = new SessionDedup(60);
    await rememberReturned(
      sessions,
      'c',
      's',
      returned.map((id) => ({ id })),
    );
    const seen = await seenBefore(sessions, 'c', 's', undefined);
    expect(labels(skipSeen(scored(...ranking.map((label): [number, number] => [label, 1])), seen, idOf))).toEqual(kept);
  });

  it('without a sessionId nothing is skipped and nothing remembered', async () => {
    const sessions = new SessionDedup(60);
    await rememberReturned(sessions, 'c', undefined, [{ id: 'doc#1' }]);
    expect(sessions.bytes).toBe(0);
    expect(await seenBefore(sessions, 'c', undefined, undefined)).toBeUndefined();
    const ranked = scored([1, 1]);
    expect(skipSeen(ranked, undefined, idOf)).toBe(ranked);
  });

  it('§10 a later page skips only what the session returned before the first page’s mark', async () => {
    const sessions = new SessionDedup(60);
    await rememberReturned(sessions, 'c', 's', [{ id: 'doc#1' }]);
    const mark = (await seenBefore(sessions, 'c', 's', undefined))!.mark; // the first page's
    await rememberReturned(sessions, 'c', 's', [{ id: 'doc#2' }]); // the first page's own hits
    const seen = await seenBefore(sessions, 'c', 's', mark);
    expect(labels(skipSeen(scored([1, 1], [2, 1], [3, 1]), seen, idOf))).toEqual([2, 3]);
  });

  it('§15.6 sessions belong to callers: another caller’s same sessionId skips nothing', async () => {
    const sessions = new SessionDedup(60);
    await rememberReturned(sessions, 'alice', 's', [{ id: 'doc#1' }]);
    expect(labels(skipSeen(scored([1, 1]), await seenBefore(sessions, 'bob', 's', undefined), idOf))).toEqual([1]);
  });

  it('ids are remembered as strings (a numeric id too)', async () => {
    const sessions = new SessionDedup(60);
    await rememberReturned(sessions, 'c', 's', [{ id: 7 }]);
    expect((await seenBefore(sessions, 'c', 's', undefined))!.has('7')).toBe(true);
  });
});
