import { BlockedAddressError } from './address-policy.js';

/**
 * What a tenant may be told about a failed outbound request: a class of failure, never the address, host or
 * answer body behind it. An attacker who names an internal target learns nothing about what is there, and an
 * error text cannot carry an internal service's answer back out.
 */
export function publicFailure(error: unknown): string {
  if (error instanceof BlockedAddressError)
    return error.message.startsWith('plain http') ? error.message : 'refused by the outbound address policy';
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? '';
  switch (code) {
    case 'ERR_OUTBOUND_BLOCKED_ADDRESS':
      return 'refused by the outbound address policy';
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'connection reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
      return 'the host name does not resolve';
    case 'ETIMEDOUT':
    case 'ECONNABORTED':
      return 'connection timed out';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED)/.test(code)) return 'TLS handshake failed';
      return 'request failed';
  }
}
