import { status as GrpcStatus, Metadata, type ServiceError } from '@grpc/grpc-js';
import {
  CairnError,
  dependencyUnavailable,
  ERROR_CATALOG,
  isDependencyUnavailable,
  isErrorCode,
  type ErrorCode,
} from '@cairn/errors';
import { WireValueError } from '@cairn/proto';

/** Metadata key carrying the precise cairn.* code across a gRPC hop (the gRPC status alone is coarser). */
export const CODE_METADATA_KEY = 'cairn-code';
/**
 * Metadata key carrying a CairnError's problem extensions (e.g. `errors`: which field, why) as UTF-8 JSON, so a
 * service answering for the gateway produces the same problem body the gateway would have.
 */
export const EXTENSIONS_METADATA_KEY = 'cairn-extensions-bin';
/** Extensions above this size are dropped rather than sent (they are for a problem body, never bulk data). */
const MAX_EXTENSIONS_BYTES = 8192;

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
        : error instanceof WireValueError
          ? // A broken internal contract (packages/proto wire.ts): the caller's logs should say which value.
            new CairnError('cairn.internal_error', error.message)
          : new CairnError('cairn.internal_error');
  const metadata = new Metadata();
  metadata.set(CODE_METADATA_KEY, known.code);
  if (Object.keys(known.extensions).length > 0) {
    const extensions = Buffer.from(JSON.stringify(known.extensions), 'utf8');
    if (extensions.length <= MAX_EXTENSIONS_BYTES) metadata.set(EXTENSIONS_METADATA_KEY, extensions);
  }
  return { code: grpcStatusForCode(known.code), details: known.message, metadata };
}

/** What a caller sees when a call fails: the callee's CairnError, or the closest code for a transport failure. */
export function fromServiceError(error: ServiceError): CairnError {
  const sent = error.metadata?.get(CODE_METADATA_KEY)[0];
  if (typeof sent === 'string' && isErrorCode(sent))
    return new CairnError(sent, error.details, sentExtensions(error.metadata), { cause: error });
  const code = BY_GRPC_STATUS[error.code] ?? 'cairn.internal_error';
  const detail = code === 'cairn.unavailable' ? 'A backend service is unavailable; retry with backoff.' : undefined;
  return new CairnError(code, detail, {}, { cause: error });
}

/** The extensions a peer sent with its error: a JSON object, else none (a malformed value is not the caller's problem). */
function sentExtensions(metadata: Metadata | undefined): Record<string, unknown> {
  const sent = metadata?.get(EXTENSIONS_METADATA_KEY)[0];
  if (!Buffer.isBuffer(sent) || sent.length > MAX_EXTENSIONS_BYTES) return {};
  try {
    const parsed: unknown = JSON.parse(sent.toString('utf8'));
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    // Not JSON: the code and detail still say what went wrong.
    return {};
  }
}
