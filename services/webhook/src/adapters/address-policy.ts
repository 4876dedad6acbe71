import { isIP } from 'node:net';
import { CairnError } from '@cairn/errors';
import { outboundPolicy, refusedReason, type DestinationPolicy } from '@cairn/outbound';

export {
  disallowedReason,
  vettedLookup,
  vetLiteralHost,
  BlockedAddressError,
  systemResolveAll,
  type DestinationPolicy,
  type ResolveAll,
} from '@cairn/outbound';

/**
 * Where webhooks may go: Cairn's one outbound policy. Production: https only, no internal address. Development:
 * http, and loopback receivers on the same machine, but still no private, link-local or metadata address.
 */
export function policyFor(env: 'development' | 'production'): DestinationPolicy {
  return outboundPolicy(env);
}

const INTERNAL_NAMES = /(^|\.)(localhost|local|internal|localdomain|home\.arpa)$/i;

/** Refuses, at creation, a URL that is malformed or obviously not allowed (the connect-time check is the real one). */
export function checkEndpointUrl(raw: string, policy: DestinationPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CairnError('cairn.webhook.invalid_url', 'url must be an absolute http(s) URL.');
  }
  if (raw.length > 2048) throw new CairnError('cairn.webhook.invalid_url', 'url must be at most 2048 characters.');
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new CairnError('cairn.webhook.invalid_url', 'url must use https.');
  if (policy.httpsOnly && url.protocol !== 'https:')
    throw new CairnError('cairn.webhook.invalid_url', 'url must use https.');
  if (url.username || url.password)
    throw new CairnError('cairn.webhook.invalid_url', 'url must not carry credentials.');
  if (policy.blockInternal) {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      const reason = refusedReason(host, policy);
      if (reason)
        throw new CairnError(
          'cairn.webhook.invalid_url',
          `url points to a ${reason} address, which webhooks may not reach.`,
        );
    } else if (
      !(policy.allowLoopback && host.toLowerCase() === 'localhost') &&
      (INTERNAL_NAMES.test(host) || !host.includes('.'))
    ) {
      throw new CairnError(
        'cairn.webhook.invalid_url',
        `url host "${host}" is an internal name, which webhooks may not reach.`,
      );
    }
  }
  return url;
}
