export {
  BlockedAddressError,
  disallowedReason,
  refusedReason,
  systemResolveAll,
  vetLiteralHost,
  vettedLookup,
  type DestinationPolicy,
  type ResolveAll,
} from './address-policy.js';
export { boundedRequest, type BoundedRequest, type BoundedResponse } from './request.js';
