import { describe, expect, it } from 'vitest';
import { RpcError } from '../../../src/protocol/errors.js';
import { failure } from '../../../src/protocol/messages.js';
import { mergeReplies } from '../../../src/protocol/screen.js';

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
