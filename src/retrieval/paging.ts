import { requestDigest, type CursorCodec } from './cursor.js';
import type { Scored } from './ranking.js';

/**
 * §10 pagination over the deterministic ranking of one snapshot. A cursor carries the offset, the request's digest,
 * the snapshot and (§7.7.3) the session's mark at the first page, so every page skips the same session hits.
 */
export interface PageStart {
  /** Digest of the request's params, cursor excluded: a cursor continues only the request that issued it. */
  readonly digest: string;
  /** Hits the earlier pages returned. */
  readonly offset: number;
  /** §7.7.3 the session's mark at the first page; undefined on a first page. */
  readonly seenMark: number | undefined;
}

/**
 * Where this page starts: at 0, or where the cursor says (-32602 for a forged or foreign one, -32015 if expired). A
 * cursor continues its caller's request only (§15.6): another caller replaying it is -32602.
 */
export function openPage(
  cursors: Pick<CursorCodec, 'decode'>,
  params: Record<string, unknown> & { readonly cursor?: string | undefined },
  indexVersion: string,
  caller = '',
): PageStart {
  const digest = requestDigest(params, caller);
  const resumed = params.cursor === undefined ? undefined : cursors.decode(params.cursor, digest, indexVersion);
  return { digest, offset: resumed?.offset ?? 0, seenMark: resumed?.seenMark };
}

/** The page's hits: at most k from the offset. */
export function pageOf(ranked: readonly Scored[], start: PageStart, k: number): Scored[] {
  return ranked.slice(start.offset, start.offset + k);
}

export interface PageEnd {
  /** How many hits the ranking holds after every filter. */
  readonly total: number;
  /** How many hits this page returned (after packing). */
  readonly returned: number;
  /** A token budget ends the walk: its page is the answer (§7.7.2), with no cursor. */
  readonly tokenBudget: number | undefined;
  readonly indexVersion: string;
  /** §7.7.3 the session's mark the later pages skip by; undefined without a session. */
  readonly seenMark: number | undefined;
}

/** The cursor to the next page, or undefined when this page is the last (or empty). */
export function cursorAfter(cursors: Pick<CursorCodec, 'encode'>, start: PageStart, end: PageEnd): string | undefined {
  const next = start.offset + end.returned;
  const more = end.tokenBudget === undefined && next < end.total && end.returned > 0;
  if (!more) return undefined;
  return cursors.encode({
    offset: next,
    indexVersion: end.indexVersion,
    request: start.digest,
    seenMark: end.seenMark,
  });
}
