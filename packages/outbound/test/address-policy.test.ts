import { describe, expect, it } from '@jest/globals';
import { disallowedReason, outboundPolicy, refusedReason } from '../src/index.js';

describe('the outbound address classes', () => {
  it('refuses every internal IPv4 class and lets public addresses through', () => {
    for (const [address, reason] of [
      ['10.1.2.3', 'private'],
      ['172.20.0.1', 'private'],
      ['192.168.0.1', 'private'],
      ['127.0.0.1', 'loopback'],
      ['169.254.169.254', 'link-local / cloud metadata'],
      ['100.64.0.1', 'shared address space (CGNAT)'],
      ['0.0.0.0', 'unspecified'],
    ] as const)
      expect([address, disallowedReason(address)]).toEqual([address, reason]);
    for (const address of ['1.1.1.1', '8.8.8.8', '2606:4700::1111', '2001:4860:4860::8888'])
      expect([address, disallowedReason(address)]).toEqual([address, undefined]);
  });

  it('judges an IPv4 address carried in IPv6 by what it carries, however it is spelled', () => {
    for (const address of [
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '0:0:0:0:0:ffff:a9fe:a9fe',
      '::ffff:0:a9fe:a9fe',
      '64:ff9b::a9fe:a9fe',
      '64:ff9b::169.254.169.254',
    ])
      expect([address, disallowedReason(address)]).toEqual([address, 'link-local / cloud metadata']);
    expect(disallowedReason('::ffff:10.0.0.1')).toBe('private');
    // Well-known NAT64 of a public address is how an IPv6-only cluster reaches the IPv4 internet.
    expect(disallowedReason('64:ff9b::8.8.8.8')).toBeUndefined();
  });

  it('refuses the embedded-IPv4 forms a gateway or tunnel may turn into an internal address', () => {
    for (const [address, reason] of [
      ['::a9fe:a9fe', 'IPv4-compatible (embeds an IPv4 address)'],
      ['::169.254.169.254', 'IPv4-compatible (embeds an IPv4 address)'],
      ['::2', 'IPv4-compatible (embeds an IPv4 address)'],
      ['64:ff9b:1::a9fe:a9fe', 'NAT64 local-use (embeds an IPv4 address)'],
      ['2002:a9fe:a9fe::1', '6to4 (embeds an IPv4 address)'],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo (embeds an IPv4 address)'],
    ] as const)
      expect([address, disallowedReason(address)]).toEqual([address, reason]);
    expect(disallowedReason('::')).toBe('unspecified');
    expect(disallowedReason('::1')).toBe('loopback');
    expect(disallowedReason('[fe80::1%eth0]')).toBe('link-local');
  });

  it('one policy for every outbound request: loopback only in development, nothing internal anywhere', () => {
    const development = outboundPolicy('development');
    const production = outboundPolicy('production');
    expect(production).toEqual({ httpsOnly: true, blockInternal: true, allowLoopback: false });
    expect(development).toEqual({ httpsOnly: false, blockInternal: true, allowLoopback: true });
    expect(refusedReason('127.0.0.1', development)).toBeUndefined();
    expect(refusedReason('::1', development)).toBeUndefined();
    expect(refusedReason('127.0.0.1', production)).toBe('loopback');
    for (const address of ['10.0.0.7', '169.254.169.254', '::a9fe:a9fe', 'fd00::1'])
      expect([address, refusedReason(address, development)]).toEqual([address, disallowedReason(address)]);
  });
});
