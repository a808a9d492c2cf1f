import { describe, expect, it } from 'vitest';
import { TimeSlice } from '../../../src/protocol/time-slice.js';

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe('TimeSlice (docs/architecture.md §9: CPU work on the event loop in bounded slices)', () => {
  it('one turn runs one budget of sliced work, however many slices it passes through', async () => {
    let otherWorkRan = false;
    setImmediate(() => (otherWorkRan = true));
    new TimeSlice(undefined, 5);
    busy(6); // a first stage spends the turn's budget...
    const next = new TimeSlice(undefined, 5); // ...and the next stage's fresh slice must still give the loop back first.
    await next.due();
    expect(otherWorkRan).toBe(true);
  });

  it('work within the budget keeps the turn', async () => {
    let otherWorkRan = false;
    const slice = new TimeSlice(undefined, 1000);
    setImmediate(() => (otherWorkRan = true));
    await slice.due();
    expect(otherWorkRan).toBe(false);
  });

  it('waiting slices resume one per turn, with other work between them', async () => {
    const order: string[] = [];
    const loop = async (name: string) => {
      const slice = new TimeSlice(undefined, 1);
      for (let i = 0; i < 3; i++) {
        busy(2);
        order.push(name);
        await slice.due();
      }
    };
    const ticker = setInterval(() => order.push('tick'), 0);
    await Promise.all([loop('a'), loop('b')]);
    clearInterval(ticker);
    expect(order.filter((entry) => entry !== 'tick')).toEqual(['a', 'b', 'a', 'b', 'a', 'b']);
    // Both start in the caller's turn; from then on, the timer gets a turn between any two resumed slices.
    const resumed = order.slice(order.indexOf('b') + 1);
    const backToBack = resumed.filter(
      (entry, i) => entry !== 'tick' && resumed[i + 1] !== undefined && resumed[i + 1] !== 'tick',
    );
    expect(backToBack).toEqual([]);
  });
});
