import { expect } from 'vitest';

/**
 * Runs `attack` while `ping` (one round trip that must answer `{}`) goes every 20 ms: its answer, the slowest ping,
 * and the 90th percentile of the pings' round trips. Over many pings the percentile is what is bounded, not the
 * slowest: on a loaded machine any one round trip may wait out the scheduler, while a loop held for the whole attack
 * holds nearly every ping (with fewer than ten pings, the percentile is the slowest of them).
 */
export async function whilePinging<T>(
  ping: () => Promise<{ result?: unknown }>,
  attack: () => Promise<T>,
): Promise<{ answer: T; worstPingMs: number; slowPingMs: number }> {
  let done = false;
  const pings: number[] = [];
  const pinger = (async () => {
    while (!done) {
      const started = performance.now();
      expect((await ping()).result).toEqual({});
      pings.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const answer = await attack().finally(() => (done = true));
  await pinger;
  pings.sort((a, b) => a - b);
  return { answer, worstPingMs: pings.at(-1)!, slowPingMs: pings[Math.ceil(pings.length * 0.9) - 1]! };
}

/**
 * Runs `work` and counts the turns of the event loop other callbacks got meanwhile (a callback that re-queues itself
 * with setImmediate): 0 when `work` ran in one synchronous step, one or more per time it gave the loop back.
 */
export async function turnsDuring<T>(work: () => Promise<T>): Promise<{ answer: T; turns: number }> {
  let turns = 0;
  let running = true;
  const tick = () => {
    turns++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { answer: await work(), turns };
  } finally {
    running = false;
  }
}
