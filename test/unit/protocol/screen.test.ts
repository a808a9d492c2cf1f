import { describe, expect, it } from 'vitest';
import { RpcError } from '../../../src/protocol/errors.js';
import { failure } from '../../../src/protocol/messages.js';
import { serializeReply } from '../../../src/protocol/frames.js';
import { mergeReplies, screen } from '../../../src/protocol/screen.js';

describe('mergeReplies', () => {
  const refused = failure(1, RpcError.rateLimited(1000, 'busy'));
  const handled = { jsonrpc: '2.0' as const, id: 2, result: {} };

  it('§11 a batch whose only answer is a member refused before the session is answered with an array', () => {
    expect(mergeReplies(undefined, [refused], true)).toEqual([refused]);
  });

  it('a single request refused is answered with its error alone; nothing refused leaves the reply as it was', () => {
    expect(mergeReplies(undefined, [refused], false)).toEqual(refused);
    expect(mergeReplies([handled], [], true)).toEqual([handled]);
    expect(mergeReplies(undefined, [], true)).toBeUndefined();
  });

  it('refused members join the members the session answered', () => {
    expect(mergeReplies([handled], [refused], true)).toEqual([handled, refused]);
  });
});

describe('screen', () => {
  it('§11 each refused request is answered with its own id and the one error, written as failure() writes it', async () => {
    const busy = RpcError.rateLimited(25, 'server busy');
    const batch = [
      { jsonrpc: '2.0', id: 1, method: 'info' },
      { jsonrpc: '2.0', id: 'two', method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 1 } },
    ];
    const { accepted, rejected } = await screen(batch, (method) =>
      method === 'notifications/cancel' ? undefined : busy,
    );
    expect(accepted).toEqual([batch[2]]);
    expect(rejected).toEqual([failure(1, busy), failure('two', busy)]);
    expect(serializeReply(rejected, 1 << 20).text).toBe(JSON.stringify([failure(1, busy), failure('two', busy)]));
  });
});
