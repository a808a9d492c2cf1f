import { describe, expect, it } from 'vitest';
import { CursorCodec } from '../../../src/retrieval/cursor.js';
import { cursorAfter, openPage, pageOf } from '../../../src/retrieval/paging.js';
import { labels, scored } from './fake-corpus.js';

const RANKED = scored([1, 0.9], [2, 0.8], [3, 0.7], [4, 0.6], [5, 0.5]);
const params = { query: 'q', k: 2 };

describe('§10 pagination', () => {
  it('walks every hit once, page by page, then gives no cursor', () => {
    const cursors = new CursorCodec();
    const pages: number[][] = [];
    let cursor: string | undefined;
    do {
      const start = openPage(cursors, cursor === undefined ? params : { ...params, cursor }, 'v1');
      const page = pageOf(RANKED, start, 2);
      pages.push(labels(page));
      const end = {
        total: RANKED.length,
        returned: page.length,
        tokenBudget: undefined,
        indexVersion: 'v1',
        seenMark: undefined,
      };
      cursor = cursorAfter(cursors, start, end);
    } while (cursor !== undefined);
    expect(pages).toEqual([[1, 2], [3, 4], [5]]);
  });

  it.each([
    { why: 'more hits remain', offset: 0, returned: 2, total: 5, tokenBudget: undefined, more: true },
    { why: 'this page ends the ranking', offset: 3, returned: 2, total: 5, tokenBudget: undefined, more: false },
    { why: 'the page is empty', offset: 0, returned: 0, total: 5, tokenBudget: undefined, more: false },
    { why: '§7.7.2 a token budget ends the walk', offset: 0, returned: 2, total: 5, tokenBudget: 100, more: false },
  ])('a cursor when $why: $more', ({ offset, returned, total, tokenBudget, more }) => {
    const start = { digest: 'd', offset, seenMark: undefined };
    const end = { total, returned, tokenBudget, indexVersion: 'v1', seenMark: undefined };
    expect(cursorAfter(new CursorCodec(), start, end) !== undefined).toBe(more);
  });

  it('a cursor carries the offset after this page and the session mark', () => {
    const cursors = new CursorCodec();
    const first = openPage(cursors, params, 'v1');
    const cursor = cursorAfter(cursors, first, {
      total: 5,
      returned: 2,
      tokenBudget: undefined,
      indexVersion: 'v1',
      seenMark: 17,
    });
    expect(openPage(cursors, { ...params, cursor: cursor! }, 'v1')).toEqual({
      digest: first.digest,
      offset: 2,
      seenMark: 17,
    });
  });

  it.each([
    { why: 'a forged cursor is -32602', cursor: 'abc.def', request: params, version: 'v1', code: -32602 },
    { why: 'a cursor for another request is -32602', request: { ...params, k: 3 }, version: 'v1', code: -32602 },
    { why: 'a cursor from another snapshot is -32015', request: params, version: 'v2', code: -32015 },
  ])('$why', ({ cursor, request, version, code }) => {
    const cursors = new CursorCodec();
    const issued = cursorAfter(cursors, openPage(cursors, params, 'v1'), {
      total: 5,
      returned: 2,
      tokenBudget: undefined,
      indexVersion: 'v1',
      seenMark: undefined,
    });
    expect(() => openPage(cursors, { ...request, cursor: cursor ?? issued! }, version)).toThrow(
      expect.objectContaining({ code }),
    );
  });

  it('a first page starts at 0 with no session mark', () => {
    expect(openPage(new CursorCodec(), params, 'v1')).toMatchObject({ offset: 0, seenMark: undefined });
  });
});
