import { setImmediate as turn, setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { LoadShedder } from '../../../src/transport/load-shedding.js';

/** §15.5 load shedding: sustained lag from clients is overload; one stall, or the server's own start-up, is not. */
const settings = { maxEventLoopDelayMs: 100, maxHeapUsedRatio: 0, maxRssBytes: 0, sampleIntervalMs: 50 };
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
    await sleep(120);
    expect(shedder.check()).toBeUndefined();
    await stalls(300, 4);
    const refusal = shedder.check();
    expect(refusal?.code).toBe(-32011);
    expect(refusal?.data).toMatchObject({ retryable: true });
  });

  it('§15.5 one stall that has ended is not overload', async () => {
    shedder = new LoadShedder(settings);
    await sleep(120);
    await stalls(400, 1);
    await sleep(60);
    expect(shedder.check()).toBeUndefined();
  });

  it("§15.5 the server's own work (start-up, loading) lags the loop without making overload", async () => {
    shedder = new LoadShedder(settings);
    const loading = stalls(300, 4);
    await shedder.ownWork(loading);
    expect(shedder.check()).toBeUndefined();
    await sleep(60);
    expect(shedder.check()).toBeUndefined();
    // Client lag after it is counted as usual.
    await stalls(300, 4);
    expect(shedder.check()?.code).toBe(-32011);
  });
});
