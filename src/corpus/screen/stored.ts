import { SCREEN_VERSION, SIGNALS, type Screen, type Signal } from './screen.js';

/**
 * A screen as the store keeps it beside its chunk (`chunks.screen`, docs/trust.md): JSON of its version, score and
 * signals. It is derived state (docs/architecture.md §1, rule 8): a value that is absent (a row written before the
 * screen), of another version, or not one this module wrote, reads as undefined, and the chunk is screened again.
 */

const KNOWN: ReadonlySet<string> = new Set(SIGNALS);

export function storedScreen(screen: Screen): string {
  return JSON.stringify({ v: screen.version, s: screen.score, f: screen.signals });
}

export function parsedScreen(stored: string | null | undefined): Screen | undefined {
  if (typeof stored !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(stored);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { v, s, f } = value as { v?: unknown; s?: unknown; f?: unknown };
  if (v !== SCREEN_VERSION || typeof s !== 'number' || !(s >= 0 && s <= 1)) return undefined;
  if (!Array.isArray(f) || !f.every((signal) => typeof signal === 'string' && KNOWN.has(signal))) return undefined;
  return { version: v, score: s, signals: f as Signal[] };
}
