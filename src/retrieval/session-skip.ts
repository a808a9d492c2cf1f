import type { JsonObject } from '../protocol/messages.js';
import type { IdOf } from './fusion.js';
import type { Scored } from './ranking.js';
import type { SeenIds, SeenStore } from './session-dedup.js';
import { unitId } from './units.js';

/**
 * §7.7.3 `sessionId` in the retrieve pipeline: hits the caller's session returned before this pagination's first
 * page are skipped; its own pages are not (the cursor's offset skips those). Without a sessionId nothing is skipped
 * and nothing remembered.
 */
export async function seenBefore(
  sessions: Pick<SeenStore, 'seen'>,
  caller: string,
  sessionId: string | undefined,
  mark: number | undefined,
): Promise<SeenIds | undefined> {
  return sessionId === undefined ? undefined : sessions.seen(caller, sessionId, mark);
}

/** The ranking without the hits the session has seen, by hit id (the id the client was given). */
export function skipSeen(ranked: Scored[], seen: SeenIds | undefined, idOf: IdOf): Scored[] {
  return seen === undefined ? ranked : ranked.filter((hit) => !seen.has(idOf(hit.label)));
}

/**
 * The session remembers the hits this answer returns, by id, so later retrieves skip them: a passage by its chunk's
 * id, which is what the ranking is compared by (hits.ts `hitId`), so a chunk once quoted is not quoted again.
 */
export async function rememberReturned(
  sessions: Pick<SeenStore, 'remember'>,
  caller: string,
  sessionId: string | undefined,
  hits: readonly JsonObject[],
): Promise<void> {
  if (sessionId !== undefined)
    await sessions.remember(
      caller,
      sessionId,
      hits.map((hit) => (hit.unit === 'passage' ? chunkIdOf(hit) : String(hit.id))),
    );
}

/** A hit's chunk id (units.ts `unitId`), from its `chunk` field. */
function chunkIdOf(hit: JsonObject): string {
  const chunk = hit.chunk as { docId: string; index: number };
  return unitId({ docId: chunk.docId, ordinal: chunk.index }, 'chunk', {}, 1);
}
