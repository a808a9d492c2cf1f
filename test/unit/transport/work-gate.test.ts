import { describe, expect, it } from 'vitest';
import { RpcError } from '../../../src/protocol/errors.js';
import { Admission } from '../../../src/transport/admission.js';
import { RateLimiter } from '../../../src/transport/rate-limit.js';
import { WorkGate, type WorkTicket } from '../../../src/transport/work-gate.js';

/** Resolves on the event loop's next turn (after the immediates queued before it). */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

function admitted(entered: WorkTicket | RpcError): WorkTicket {
  expect(entered).not.toBeInstanceOf(RpcError);
  return entered as WorkTicket;
}

function refused(entered: WorkTicket | RpcError): void {
  expect(entered).toBeInstanceOf(RpcError);
  expect((entered as RpcError).code).toBe(-32011);
  expect((entered as RpcError).data.retryAfterMs).toBeGreaterThan(0);
}

describe('WorkGate (§15.5)', () => {
  it('starts at most its places in one turn of the event loop, however quickly each one finishes', async () => {
    const gate = new WorkGate(2);
    admitted(gate.enter('a')).release();
    admitted(gate.enter('a')).release();
    refused(gate.enter('a')); // nothing in flight, but this turn has started its two
    await nextTurn();
    admitted(gate.enter('a')).release();
  });

  it('holds at most its places in flight across turns, and frees one as soon as it is given back', async () => {
    const gate = new WorkGate(2);
    const first = admitted(gate.enter('a'));
    admitted(gate.enter('a'));
    await nextTurn();
    refused(gate.enter('a'));
    first.release();
    admitted(gate.enter('a'));
  });

  it("keeps a caller's fair share of a turn while another caller has taken every place", async () => {
    const gate = new WorkGate(2);
    admitted(gate.enter('flood')).release();
    admitted(gate.enter('flood')).release();
    refused(gate.enter('flood'));
    admitted(gate.enter('polite')).release();
    refused(gate.enter('polite')); // its share of two places between two callers is one
    await nextTurn();
    admitted(gate.enter('polite')).release();
  });
});

describe('WorkGate places taken by a batch (§11, §15.5)', () => {
  it('a batch takes one place per member it runs at once; its caller waits, another caller within its share does not', async () => {
    const gate = new WorkGate(8);
    const batch = admitted(gate.enter('flooder', 8));
    await nextTurn();
    refused(gate.enter('flooder'));
    refused(gate.enter('flooder', 8));
    const victim = admitted(gate.enter('victim'));
    batch.release();
    victim.release();
    await nextTurn();
    // All eight given back at once; more than the places asked for is all of them, not more.
    admitted(gate.enter('flooder', 128)).release();
    expect(gate.inFlight).toBe(0);
  });
});

describe('Admission of batches (§11, §15.5)', () => {
  const frame = (...methods: string[]) => methods.map((method, id) => ({ jsonrpc: '2.0', id, method }));
  const limiter = new RateLimiter({ reads: 0, writes: 0, models: 0 });

  it('a batch of several lifecycle requests needs a place among the work in flight; a single ping never does', async () => {
    const admission = new Admission(undefined, limiter, () => undefined, new WorkGate(1));
    const first = admitted(admission.enterWork('flooder', frame('info', 'info')) as WorkTicket | RpcError);
    await nextTurn();
    const busy = admission.enterWork('flooder', frame('initialize', 'ping', 'info'));
    refused(busy as RpcError);
    // Every request of the refused batch is answered -32011; a cancel in it still goes through.
    const refuse = admission.refuseWork(busy as RpcError, frame('ping', 'info'));
    expect([await refuse('ping'), await refuse('info'), await refuse('notifications/cancel')]).toEqual([
      busy,
      busy,
      undefined,
    ]);
    // A single lifecycle request (or a batch of one) takes no place: ping and info answer under any load.
    expect(admission.enterWork('victim', { jsonrpc: '2.0', id: 1, method: 'ping' })).toBeUndefined();
    expect(admission.enterWork('victim', frame('info'))).toBeUndefined();
    expect(await admission.refuseWork(busy as RpcError, frame('ping'))('ping')).toBeUndefined();
    first.release();
  });
});
