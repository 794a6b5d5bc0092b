import { describe, expect, it } from 'vitest';
import { clientAddress } from '../../src/http/client-address.ts';

describe('clientAddress', () => {
  it('counts IPv4 clients by address, the IPv4-mapped form included', () => {
    expect(clientAddress('203.0.113.7')).toBe('203.0.113.7');
    expect(clientAddress('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('counts IPv6 clients by their /64, however the address is written', () => {
    const same = ['2001:db8:1:2::7', '2001:0db8:0001:0002:ffff:0:0:1', '2001:DB8:1:2:a:b:c:d', '2001:db8:1:2::1%eth0'];
    expect(new Set(same.map(clientAddress))).toEqual(new Set(['2001:db8:1:2::/64']));
    expect(clientAddress('2001:db8:1:3::7')).toBe('2001:db8:1:3::/64');
    expect(clientAddress('::1')).toBe('0:0:0:0::/64');
    expect(clientAddress('2001:db8::')).toBe('2001:db8:0:0::/64');
  });

  it('names an unknown peer (a socket already closed) as such', () => {
    expect(clientAddress(undefined)).toBe('unknown');
  });
});
