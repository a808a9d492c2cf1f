import { setImmediate as turn, setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { LoadShedder } from '../../../src/transport/load-shedding.js';

/**
 * §15.5 load shedding: sustained lag from clients is overload; one stall, or the server's own start-up, is not.
 *
 * Samples every 100 ms, lag past 250 ms: a stall of 400 ms lags the sample after it by 300 ms at least. This process
 * losing the CPU on a loaded machine is no stall of the test's: to add a second lagging sample to a "not overload"
 * check, it would have to last over a third of a second, right after the stall.
 */
const settings = { maxEventLoopDelayMs: 250, maxHeapUsedRatio: 0, maxRssBytes: 0, sampleIntervalMs: 100 };
const STALL_MS = 400;
let shedder: LoadShedder | undefined;
afterEach(() => shedder?.close());

/** Busy-waits `ms`, `times` times, letting timers (the sampler) run between stalls. */
async function stalls(ms: number, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    await sleep(1);
    const until = performance.now() + ms;
    while (performance.now() < until);
    await turn();
  }
}

describe('LoadShedder', () => {
  it('§15.5 refuses with -32011 while the loop lags in consecutive samples', async () => {
    shedder = new LoadShedder(settings);
    await sleep(220);
    expect(shedder.check()).toBeUndefined();
    await stalls(STALL_MS, 4);
    const refusal = shedder.check();
    expect(refusal?.code).toBe(-32011);
    expect(refusal?.data).toMatchObject({ retryable: true });
  });

  it('§15.5 one stall that has ended is not overload', async () => {
    shedder = new LoadShedder(settings);
    await sleep(220);
    await stalls(STALL_MS * 1.5, 1);
    await sleep(120);
    expect(shedder.check()).toBeUndefined();
  });

  it("§15.5 the server's own work (start-up, loading) lags the loop without making overload", async () => {
    shedder = new LoadShedder(settings);
    const loading = stalls(STALL_MS, 4);
    await shedder.ownWork(loading);
    expect(shedder.check()).toBeUndefined();
    await sleep(120);
    expect(shedder.check()).toBeUndefined();
    // Client lag after it is counted as usual.
    await stalls(STALL_MS, 4);
    expect(shedder.check()?.code).toBe(-32011);
  });
});
