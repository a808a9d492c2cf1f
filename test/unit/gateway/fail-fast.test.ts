import { describe, expect, it, vi } from 'vitest';
import { FailFastEngine } from '../../../src/gateway/fail-fast.js';
import { UnansweredError } from '../../../src/gateway/remote-engine.js';
import { RpcErrorCode } from '../../../src/protocol/codes.js';
import { RpcError } from '../../../src/protocol/errors.js';
import { silentLogger } from '../../helpers/logger.js';
import { fakeEngine } from './fake-engine.js';

/**
 * Fail-fast's rules (docs/federation.md) over an engine whose every answer the test chooses: only calls without an
 * answer count, the down engine is refused at once, one call probes it after the back-off, a failed probe doubles it.
 */
function engineAnswering(next: () => Promise<Record<string, unknown>>) {
  const calls = { count: 0 };
  const engine = {
    ...fakeEngine('e'),
    call: () => {
      calls.count += 1;
      return next();
    },
  };
  return { engine: new FailFastEngine(engine, { downAfter: 3, downForMs: 1000 }, silentLogger), calls };
}
const timeout = (): Promise<Record<string, unknown>> =>
  Promise.reject(new UnansweredError(RpcErrorCode.Timeout, 'timeout'));
const call = (engine: FailFastEngine) => engine.call('retrieve', {}, { deadlineMs: 100 });
const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 0,
    (error: RpcError) => error.code,
  );

describe('FailFastEngine', () => {
  it('marks an engine down after three calls in a row without an answer, refuses at once, probes after the back-off', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      let answer = timeout;
      const { engine, calls } = engineAnswering(() => answer());
      for (let i = 0; i < 3; i++) expect(await codeOf(call(engine))).toBe(RpcErrorCode.Timeout);
      expect(engine.state).toEqual({ engine: 'e', down: true, markedDown: 1 });
      const refused = await call(engine).catch((error: RpcError) => error);
      expect(refused).toMatchObject({ code: RpcErrorCode.BackendUnavailable, data: { retryAfterMs: 1000 } });
      expect(calls.count).toBe(3);
      // A failed probe: down again, for twice as long.
      vi.advanceTimersByTime(1000);
      expect(await codeOf(call(engine))).toBe(RpcErrorCode.Timeout);
      expect(calls.count).toBe(4);
      expect(await call(engine).catch((error: RpcError) => error.data.retryAfterMs)).toBe(2000);
      // A probe answered (even with the engine's own error) brings it back.
      vi.advanceTimersByTime(2000);
      answer = () => Promise.reject(new RpcError(RpcErrorCode.InvalidParams, 'bad k'));
      expect(await codeOf(call(engine))).toBe(RpcErrorCode.InvalidParams);
      expect(engine.state.down).toBe(false);
      answer = () => Promise.resolve({ hits: [] });
      expect(await codeOf(call(engine))).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("the engine's own -32014 and -32010, and cancels, are answers: they never mark it down", async () => {
    const answers = [
      () => Promise.reject(new RpcError(RpcErrorCode.Timeout, 'deadline of 10 ms elapsed')),
      () => Promise.reject(RpcError.backendUnavailable('store away', 1000)),
      () => Promise.reject(RpcError.cancelled('cancelled')),
    ];
    let i = 0;
    const { engine } = engineAnswering(() => answers[i++ % answers.length]!());
    for (let n = 0; n < 9; n++) await codeOf(call(engine));
    expect(engine.state).toEqual({ engine: 'e', down: false, markedDown: 0 });
  });

  it('an answer between failures resets the count', async () => {
    const answers = [timeout, timeout, () => Promise.resolve({}), timeout, timeout];
    let i = 0;
    const { engine } = engineAnswering(() => answers[i++]!());
    for (let n = 0; n < answers.length; n++) await codeOf(call(engine));
    expect(engine.state.down).toBe(false);
  });
});
