import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Where an outbound request may go. `blockInternal` refuses every address that reaches inside the deployment
 * (private, loopback, link-local, unique-local, CGNAT, cloud metadata, multicast, reserved), checked on the
 * resolved addresses at connect time. `allowLoopback` lets loopback through anyway: development only, so that a
 * service can reach a peer on the same machine (the signer's OCSP responder, a local webhook receiver).
 */
export interface DestinationPolicy {
  httpsOnly: boolean;
  blockInternal: boolean;
  allowLoopback?: boolean;
}

const V4_BLOCKS: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared address space (CGNAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local / cloud metadata'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];
const V6_BLOCKS: Array<[string, number, string]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fc00::', 7, 'unique-local'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
  ['2001:db8::', 32, 'documentation'],
  ['100::', 64, 'discard'],
];

const v4 = V4_BLOCKS.map(([net, prefix, reason]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, 'ipv4');
  return { list, reason };
});
const v6 = V6_BLOCKS.map(([net, prefix, reason]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, 'ipv6');
  return { list, reason };
});

/** An IPv4 address embedded in an IPv6 one (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, IPv4-compatible). */
function embeddedV4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:(?:0:)?|64:ff9b::|::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:(?:0:)?|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
  }
  return undefined;
}

/** Why no outbound request may connect to `address` (an IP literal), or undefined when it may. */
export function disallowedReason(address: string): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return v4.find((b) => b.list.check(bare, 'ipv4'))?.reason;
  if (family === 6) {
    const inner = embeddedV4(bare);
    if (inner) return disallowedReason(inner);
    return v6.find((b) => b.list.check(bare, 'ipv6'))?.reason;
  }
  return 'not an IP address';
}

export type ResolveAll = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolveAll: ResolveAll = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    ),
  );

export class BlockedAddressError extends Error {
  readonly code = 'ERR_OUTBOUND_BLOCKED_ADDRESS';
}

/** Why `address` is refused under `policy`, or undefined when it may be reached. */
export function refusedReason(address: string, policy: DestinationPolicy): string | undefined {
  if (!policy.blockInternal) return undefined;
  const reason = disallowedReason(address);
  return reason === 'loopback' && policy.allowLoopback ? undefined : reason;
}

/**
 * A `lookup` for sockets that vets every resolved address and hands the socket only a vetted one, so the
 * check happens at connect time and DNS rebinding cannot slip a private address in between check and use.
 */
export function vettedLookup(policy: DestinationPolicy, resolveAll: ResolveAll = systemResolveAll): LookupFunction {
  return (hostname, options, callback) => {
    resolveAll(hostname).then(
      (addresses) => {
        for (const a of addresses) {
          const reason = refusedReason(a.address, policy);
          if (reason)
            return callback(
              new BlockedAddressError(`${hostname} resolves to ${a.address} (${reason}); refused`),
              '',
              4,
            );
        }
        const usable = options.family ? addresses.filter((a) => a.family === options.family) : addresses;
        const first = usable[0];
        if (!first)
          return callback(Object.assign(new Error(`${hostname} has no usable address`), { code: 'ENOTFOUND' }), '', 4);
        if (options.all) return callback(null, usable);
        callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 4),
    );
  };
}

/** The connect-time check for an IP-literal host (sockets skip `lookup` for those). */
export function vetLiteralHost(url: URL, policy: DestinationPolicy): void {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (policy.httpsOnly && url.protocol !== 'https:')
    throw new BlockedAddressError('plain http is refused in production');
  if (!isIP(host)) return;
  const reason = refusedReason(host, policy);
  if (reason) throw new BlockedAddressError(`${host} is a ${reason} address; refused`);
}
