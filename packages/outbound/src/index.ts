export {
  BlockedAddressError,
  disallowedReason,
  outboundPolicy,
  outboundPolicyOf,
  refusedReason,
  systemResolveAll,
  vetLiteralHost,
  vettedLookup,
  type DestinationPolicy,
  type ResolveAll,
} from './address-policy.js';
export { boundedRequest, type BoundedRequest, type BoundedResponse } from './request.js';
export { publicFailure } from './failure.js';
