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

/**
 * The one policy for every request a tenant or a file can aim (webhooks, BYOK endpoints, OCSP responders, trust
 * lists, audit export endpoints): never an internal address; loopback only in development, where the peers and
 * test receivers run on the same machine; https only in production.
 */
export function outboundPolicy(env: 'development' | 'production', overrides: { allowLoopback?: boolean } = {}) {
  const production = env === 'production';
  return {
    httpsOnly: production,
    blockInternal: true,
    allowLoopback: overrides.allowLoopback ?? !production,
  } satisfies DestinationPolicy;
}

/**
 * outboundPolicy from a service's settings: CAIRN_ENV, and OUTBOUND_ALLOW_LOOPBACK when set (`true` lets loopback
 * through in production too, for a deployment whose peers share the node; `false` refuses it in development).
 */
export function outboundPolicyOf(config: {
  CAIRN_ENV: 'development' | 'production';
  OUTBOUND_ALLOW_LOOPBACK?: 'true' | 'false' | undefined;
}) {
  return outboundPolicy(
    config.CAIRN_ENV,
    config.OUTBOUND_ALLOW_LOOPBACK ? { allowLoopback: config.OUTBOUND_ALLOW_LOOPBACK === 'true' } : {},
  );
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

/** One BlockList per block, so a match names the block's reason. */
function blockLists(blocks: Array<[string, number, string]>, family: 'ipv4' | 'ipv6') {
  return blocks.map(([net, prefix, reason]) => {
    const list = new BlockList();
    list.addSubnet(net, prefix, family);
    return { list, reason };
  });
}
const v4 = blockLists(V4_BLOCKS, 'ipv4');
const v6 = blockLists(V6_BLOCKS, 'ipv6');

/** The 16 bytes of an IPv6 literal (any spelling isIP accepts: `::` anywhere, a trailing dotted quad), or undefined. */
function ipv6Bytes(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 0) return undefined;
  const words = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail].map((g) =>
    parseInt(g, 16),
  );
  if (words.some((w) => !Number.isInteger(w) || w < 0 || w > 0xffff)) return undefined;
  return words.flatMap((w) => [w >> 8, w & 255]);
}

const zero = (bytes: number[], from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
const dottedQuad = (bytes: number[], at: number) => bytes.slice(at, at + 4).join('.');

/**
 * IPv6 forms that carry an IPv4 address: the ones whose IPv4 part decides (IPv4-mapped ::ffff:0:0/96, SIIT
 * ::ffff:0:0:0/96, well-known NAT64 64:ff9b::/96) answer `{ v4 }`; the ones never to be reached at all (the
 * deprecated IPv4-compatible ::/96, NAT64 local-use 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32, each of
 * which a gateway or tunnel may turn into an internal IPv4 address) answer `{ refused }`.
 */
function embeddedV4(bytes: number[]): { v4: string } | { refused: string } | undefined {
  if (zero(bytes, 0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return { v4: dottedQuad(bytes, 12) };
  if (zero(bytes, 0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zero(bytes, 10, 12))
    return { v4: dottedQuad(bytes, 12) };
  // :: and ::1 are the v6 table's (unspecified, loopback); every other ::/96 address is IPv4-compatible.
  if (zero(bytes, 0, 12) && !(zero(bytes, 12, 15) && (bytes[15] ?? 0) <= 1))
    return { refused: 'IPv4-compatible (embeds an IPv4 address)' };
  const word = (i: number) => ((bytes[2 * i] ?? 0) << 8) | (bytes[2 * i + 1] ?? 0);
  if (word(0) === 0x64 && word(1) === 0xff9b) {
    if (zero(bytes, 4, 12)) return { v4: dottedQuad(bytes, 12) };
    if (word(2) === 1) return { refused: 'NAT64 local-use (embeds an IPv4 address)' };
  }
  if (word(0) === 0x2002) return { refused: '6to4 (embeds an IPv4 address)' };
  if (word(0) === 0x2001 && word(1) === 0) return { refused: 'Teredo (embeds an IPv4 address)' };
  return undefined;
}

/** Why no outbound request may connect to `address` (an IP literal), or undefined when it may. */
export function disallowedReason(address: string): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return v4.find((b) => b.list.check(bare, 'ipv4'))?.reason;
  if (family === 6) {
    const bytes = ipv6Bytes(bare);
    if (!bytes) return 'not an IP address';
    const inner = embeddedV4(bytes);
    if (inner) return 'v4' in inner ? disallowedReason(inner.v4) : inner.refused;
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
