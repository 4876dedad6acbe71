import { docsUrl } from '@cairn/config';
import { ERROR_CATALOG, isErrorCode, type ErrorCode } from './catalog.js';

/** RFC 7807 Problem Details as Cairn answers them. */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  request_id: string;
  /** Field-level messages for validation failures. */
  errors?: ReadonlyArray<{ path: string; message: string }>;
  [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** An error that carries a catalog code: the one thrown (or returned) wherever a request cannot be served. */
export class CairnError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly extensions: Readonly<Record<string, unknown>>;

  constructor(
    code: ErrorCode,
    detail?: string,
    extensions: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(detail ?? ERROR_CATALOG[code].title, options);
    this.name = 'CairnError';
    this.code = code;
    this.status = ERROR_CATALOG[code].status;
    this.extensions = extensions;
  }
}

export function isCairnError(value: unknown): value is CairnError {
  return value instanceof CairnError;
}

/**
 * For `.catch(absentAsUndefined)` on a call where "not found" is an answer: undefined for cairn.not_found, and any
 * other failure (the callee unavailable, a bug) rethrown rather than mistaken for absence.
 */
export function absentAsUndefined(error: unknown): undefined {
  if (isCairnError(error) && error.code === 'cairn.not_found') return undefined;
  throw error;
}

/**
 * Any thrown value as a CairnError: a CairnError as it is; anything else becomes cairn.internal_error with `detail`
 * (never the original message, which may hold internals) and the original kept as its cause for the log.
 */
export function asCairnError(error: unknown, detail: string): CairnError {
  return isCairnError(error) ? error : new CairnError('cairn.internal_error', detail, {}, { cause: error });
}

/**
 * What a failed asynchronous job keeps on its row and sends in job.failed (the job has no request id or docs URL).
 * A type, not an interface, so it fits the event payloads' open records.
 */
export type JobProblem = {
  code: ErrorCode;
  title: string;
  status: number;
  detail: string;
};

export function toJobProblem(known: CairnError): JobProblem {
  return { code: known.code, title: ERROR_CATALOG[known.code].title, status: known.status, detail: known.message };
}

/**
 * Builds the Problem+JSON body for any thrown value. Anything that is not a CairnError becomes
 * cairn.internal_error with a detail that never echoes the original message (it may hold internals).
 */
export function toProblem(error: unknown, context: { docsUrl: string; requestId: string }): ProblemDocument {
  const known = asCairnError(error, 'An internal error occurred; it has been logged.');
  const entry = ERROR_CATALOG[known.code];
  return {
    ...known.extensions,
    type: docsUrl(context.docsUrl, `/api/errors#${known.code}`),
    title: entry.title,
    status: entry.status,
    detail: known.message,
    code: known.code,
    request_id: context.requestId,
  };
}

export { ERROR_CATALOG, isErrorCode, type ErrorCode };
