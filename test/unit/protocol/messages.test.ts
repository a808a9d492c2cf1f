import { describe, expect, it } from 'vitest';
import { classify } from '../../../src/protocol/messages.js';

describe('§4 envelope classification', () => {
  it.each([
    [
      '§4.1 a request',
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { kind: 'request', id: 1, method: 'ping', params: {} },
    ],
    ['§4.5 a notification (no id)', { jsonrpc: '2.0', method: 'x' }, { kind: 'notification', method: 'x', params: {} }],
    [
      '§4.5 a notification with positional params (unusable, never answered)',
      { jsonrpc: '2.0', method: 'notifications/cancel', params: [1] },
      { kind: 'notification', method: 'notifications/cancel', params: {} },
    ],
    [
      '§4.6 params null is absent',
      { jsonrpc: '2.0', id: 's', method: 'm', params: null },
      { kind: 'request', id: 's', method: 'm', params: {} },
    ],
  ])('%s', (_name, value, expected) => {
    expect(classify(value)).toEqual(expected);
  });

  it.each([
    ['a number', 5, null],
    ['an array', [], null],
    ['missing jsonrpc', { id: 3, method: 'm' }, 3],
    ['a non-string method', { jsonrpc: '2.0', id: 'x', method: null }, 'x'],
    ['a null id', { jsonrpc: '2.0', id: null, method: 'm' }, null],
    ['an object id', { jsonrpc: '2.0', id: {}, method: 'm' }, null],
    ['a non-finite id is unrecoverable', { jsonrpc: '2.0', id: Number.NaN, method: 'm' }, null],
    ['array params', { jsonrpc: '2.0', id: 4, method: 'm', params: [] }, 4],
  ])('§4.1 %s is invalid, echoing the recoverable id', (_name, value, id) => {
    const message = classify(value);
    expect(message).toMatchObject({ kind: 'invalid', id });
    expect(message.kind === 'invalid' && message.error.code).toBe(-32600);
  });
});
