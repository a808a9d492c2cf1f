import type { Encoder } from '../models/index.js';
import type { TimeSlice } from '../protocol/time-slice.js';
import type { Scored } from './ranking.js';

export interface Packed {
  readonly page: Scored[];
  /** Tokens of the packed bodies (`usage.tokens`); undefined without a budget. */
  readonly tokens: number | undefined;
}

/**
 * §7.7.2 token budget: best hits first while their bodies fit; the first that does not fit ends the page (k and
 * tokenBudget: whichever binds first wins). Bodies (what each hit's `text` will be: hits.ts `bodyOf`) are counted in
 * the encoder's tokens, in the caller's time slices (each reads a stored text). Without a budget the page is returned whole.
 */
export async function packTokenBudget(
  page: Scored[],
  tokenBudget: number | undefined,
  bodyOf: (hit: Scored) => string,
  encoder: Pick<Encoder, 'tokenCount'>,
  slice: TimeSlice,
): Promise<Packed> {
  if (tokenBudget === undefined) return { page, tokens: undefined };
  let tokens = 0;
  const packed: Scored[] = [];
  for (const hit of page) {
    const size = await encoder.tokenCount(bodyOf(hit), slice);
    if (tokens + size > tokenBudget) break;
    tokens += size;
    packed.push(hit);
    await slice.due();
  }
  return { page: packed, tokens };
}
