import { withoutHidden, type CorpusReader, type Screen } from '../corpus/index.js';
import type { JsonObject } from '../protocol/messages.js';
import type { TrustLevel } from './hits.js';
import type { Unit } from './retrieve-options.js';

/**
 * §7.7 `Hit.trust` from a hit's provenance and its text's injection screen (docs/trust.md, §15.2). Advisory only: a
 * hit is never dropped or blocked for what the screen finds, and no sign found is no proof of safety.
 */

/** `retrieve.injection`: when a hit is suspected, and whether hidden characters are removed from its text. */
export interface InjectionSettings {
  readonly threshold: number;
  readonly sanitize: boolean;
}

/**
 * How far each level's text is taken as safe before it is read: `trust.score` is this times the screen's score,
 * the chance a passage is safe to quote when its source and its text are independent evidence. Trusted text (the
 * operator's, from a source named trusted) is taken on its screen alone.
 */
export const LEVEL_PRIOR: Readonly<Record<TrustLevel, number>> = { trusted: 1, community: 0.8, untrusted: 0.6 };

/**
 * The hit's trust object, and its text as returned: without hidden characters when `sanitize` is on and the text
 * had some (`sanitized: true`; `citation` offsets still index the stored document, of which the text is then no
 * longer a verbatim slice).
 */
export function trustFor(
  level: TrustLevel,
  screen: Screen,
  settings: InjectionSettings,
  text: string | undefined,
): { trust: JsonObject; text: string | undefined } {
  const trust: JsonObject = {
    level,
    score: Math.round(LEVEL_PRIOR[level] * screen.score * 1000) / 1000,
    injectionSuspected: screen.score <= settings.threshold,
  };
  if (screen.signals.length > 0) trust['x-rcp-server-signals'] = [...screen.signals];
  if (!settings.sanitize || text === undefined) return { trust, text };
  const clean = withoutHidden(text);
  if (clean !== text) trust.sanitized = true;
  return { trust, text: clean };
}

/**
 * Screens, before hits are built, the bodies that are more than their chunk (`unit` page or document: their text may
 * be a megabyte), in time slices; building a hit then finds its screen kept (CorpusReader.screenBody).
 */
export async function screenBodies(
  labels: readonly number[],
  unit: Unit,
  corpus: Pick<CorpusReader, 'getChunk' | 'screenBody'>,
  bodyOf: (label: number) => string,
  signal: AbortSignal,
): Promise<void> {
  if (unit !== 'page' && unit !== 'document') return;
  for (const label of labels) {
    const chunk = corpus.getChunk(label);
    if (chunk !== undefined) await corpus.screenBody(chunk, bodyOf(label), signal);
  }
}
