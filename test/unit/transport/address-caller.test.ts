import { describe, expect, it } from 'vitest';
import { callerOfAddress } from '../../../src/transport/address-caller.js';

describe('§15.6 the caller a client address stands for', () => {
  it('an IPv4 address is itself, written as IPv6 too', () => {
    expect(callerOfAddress('203.0.113.7')).toBe('203.0.113.7');
    expect(callerOfAddress('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('an IPv6 address is its /64 network, however it is written', () => {
    const network = '2001:db8:7:9::/64';
    for (const address of [
      '2001:db8:7:9::1',
      '2001:0db8:0007:0009:ffff:ffff:ffff:ffff',
      '2001:db8:7:9:1:2:3:4',
      '2001:db8:7:9:1:2:192.0.2.1',
      '2001:db8:7:9::1%eth0',
    ]) {
      expect(callerOfAddress(address), address).toBe(network);
    }
    expect(callerOfAddress('::1')).toBe('0:0:0:0::/64');
    expect(callerOfAddress('2001:db8::')).toBe('2001:db8:0:0::/64');
    expect(callerOfAddress('2001:db8:7:a::1')).not.toBe(network);
  });

  it('what is not an address (a proxy that said nothing usable) stays as it is', () => {
    expect(callerOfAddress('')).toBe('');
    expect(callerOfAddress('not an address')).toBe('not an address');
  });
});
