import { status as GrpcStatus, Metadata, type ServiceError } from '@grpc/grpc-js';
import {
  CairnError,
  dependencyUnavailable,
  ERROR_CATALOG,
  isDependencyUnavailable,
  isErrorCode,
  type ErrorCode,
} from '@cairn/errors';

/** Metadata key carrying the precise cairn.* code across a gRPC hop (the gRPC status alone is coarser). */
export const CODE_METADATA_KEY = 'cairn-code';

const BY_HTTP_STATUS: Record<number, GrpcStatus> = {
  400: GrpcStatus.INVALID_ARGUMENT,
  401: GrpcStatus.UNAUTHENTICATED,
  402: GrpcStatus.FAILED_PRECONDITION,
  403: GrpcStatus.PERMISSION_DENIED,
  404: GrpcStatus.NOT_FOUND,
  405: GrpcStatus.UNIMPLEMENTED,
  409: GrpcStatus.ALREADY_EXISTS,
  410: GrpcStatus.NOT_FOUND,
  413: GrpcStatus.INVALID_ARGUMENT,
  415: GrpcStatus.INVALID_ARGUMENT,
  422: GrpcStatus.INVALID_ARGUMENT,
  429: GrpcStatus.RESOURCE_EXHAUSTED,
  500: GrpcStatus.INTERNAL,
  503: GrpcStatus.UNAVAILABLE,
};

const BY_GRPC_STATUS: Partial<Record<GrpcStatus, ErrorCode>> = {
  [GrpcStatus.INVALID_ARGUMENT]: 'cairn.validation.invalid_body',
  [GrpcStatus.UNAUTHENTICATED]: 'cairn.auth.invalid_key',
  [GrpcStatus.PERMISSION_DENIED]: 'cairn.auth.forbidden',
  [GrpcStatus.NOT_FOUND]: 'cairn.not_found',
  [GrpcStatus.RESOURCE_EXHAUSTED]: 'cairn.ratelimit.exceeded',
  [GrpcStatus.UNAVAILABLE]: 'cairn.unavailable',
  [GrpcStatus.DEADLINE_EXCEEDED]: 'cairn.unavailable',
};

export function grpcStatusForCode(code: ErrorCode): GrpcStatus {
  return BY_HTTP_STATUS[ERROR_CATALOG[code].status] ?? GrpcStatus.UNKNOWN;
}

/** What a handler's thrown value becomes on the wire: status, message and the cairn code in metadata. */
export function toServiceError(error: unknown): Partial<ServiceError> {
  // A handler whose database is restarting answers UNAVAILABLE (retried by callers that may retry), not INTERNAL.
  const known =
    error instanceof CairnError
      ? error
      : isDependencyUnavailable(error)
        ? dependencyUnavailable(error)
        : new CairnError('cairn.internal_error');
  const metadata = new Metadata();
  metadata.set(CODE_METADATA_KEY, known.code);
  return { code: grpcStatusForCode(known.code), details: known.message, metadata };
}

/** What a caller sees when a call fails: the callee's CairnError, or the closest code for a transport failure. */
export function fromServiceError(error: ServiceError): CairnError {
  const sent = error.metadata?.get(CODE_METADATA_KEY)[0];
  if (typeof sent === 'string' && isErrorCode(sent)) return new CairnError(sent, error.details, {}, { cause: error });
  const code = BY_GRPC_STATUS[error.code] ?? 'cairn.internal_error';
  const detail = code === 'cairn.unavailable' ? 'A backend service is unavailable; retry with backoff.' : undefined;
  return new CairnError(code, detail, {}, { cause: error });
}
