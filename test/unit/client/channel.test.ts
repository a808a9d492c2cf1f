import { describe, expect, it } from 'vitest';
import { MAX_UNREAD_BYTES, StdioChannel } from '../../../src/client/channel.js';
import { ConnectionClosedError } from '../../../src/client/client-errors.js';

describe('StdioChannel (the typed client and the gateway’s engine links)', () => {
  it('§15.5 a server that stops reading its input fails further requests at once instead of queueing them in memory', async () => {
    // A real process that never reads stdin: what a stopped or deadlocked engine looks like from the gateway.
    const channel = new StdioChannel([process.execPath, '-e', 'setInterval(() => {}, 1 << 30)']);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const text = 'x'.repeat(1024 * 1024);
    const sends: Promise<unknown>[] = [];
    let refused: unknown;
    for (let id = 0; id < 64 && refused === undefined; id++) {
      const sent = channel.send({ jsonrpc: '2.0', id, method: 'x-test/echo', params: { text } }, { timeoutMs: 60_000 });
      sends.push(sent.catch(() => undefined));
      refused = await Promise.race([
        sent.then(
          () => undefined,
          (error: unknown) => error,
        ),
        new Promise((r) => setImmediate(r)),
      ]);
    }
    // Refused once about MAX_UNREAD_BYTES were waiting in the pipe, not after all 64 MB.
    expect(refused).toBeInstanceOf(ConnectionClosedError);
    expect(sends.length).toBeLessThanOrEqual(MAX_UNREAD_BYTES / (1024 * 1024) + 2);
    await channel.close().catch(() => undefined);
  });
});
