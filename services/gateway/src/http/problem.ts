import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import {
  CairnError,
  dependencyUnavailable,
  isDependencyUnavailable,
  PROBLEM_CONTENT_TYPE,
  toProblem,
  UNAVAILABLE_RETRY_AFTER_SECONDS,
} from '@cairn/errors';
import type { Logger } from '@cairn/logging';
import './types.js';

export function sendProblem(res: Response, error: unknown, docsUrl: string): void {
  const problem = toProblem(error, { docsUrl, requestId: res.req.requestId });
  res.status(problem.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problem));
}

/** Unknown routes answer Problem+JSON like everything else. */
export const notFound: RequestHandler = (req, _res, next) => {
  next(new CairnError('cairn.not_found', `No route for ${req.method} ${req.path}`));
};

interface BodyParserError {
  type?: string;
  status?: number;
  expose?: boolean;
}

/** body-parser's and multer's errors mapped to catalog codes; anything unexpected is logged and hidden. */
function classify(error: unknown): unknown {
  if (error instanceof CairnError) return error;
  const e = error as BodyParserError;
  if (e?.type === 'entity.parse.failed')
    return new CairnError('cairn.validation.invalid_body', 'The request body is not valid JSON.');
  if (e?.type === 'entity.too.large')
    return new CairnError(
      'cairn.validation.body_too_large',
      'The request body exceeds the size limit for this endpoint.',
    );
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported')
    return new CairnError('cairn.validation.unsupported_media_type', 'Unsupported body encoding or charset.');
  if (e?.type === 'request.aborted')
    return new CairnError('cairn.validation.invalid_body', 'The request was aborted before its body arrived.');
  // Postgres restarting (or unreachable) is a temporary 503 the client retries, not an internal error.
  if (isDependencyUnavailable(error)) return dependencyUnavailable(error);
  return error;
}

export function errorHandler(logger: Logger, docsUrl: string): ErrorRequestHandler {
  return (error: unknown, _req, res, _next) => {
    if (res.headersSent || res.destroyed) {
      // A response already under way (a streamed download whose source broke, a client that went away) cannot
      // become a problem any more: log it and make sure the connection is cut, so the client sees a truncated
      // body rather than a complete-looking one, and the process carries on.
      logger.warn({ err: error }, 'response failed after it started; connection closed');
      res.destroy();
      return;
    }
    const known = classify(error);
    if (!(known instanceof CairnError)) logger.error({ err: error }, 'unhandled error');
    else if (known.status >= 500) logger.warn({ err: known.cause ?? known, code: known.code }, 'request failed');
    if (known instanceof CairnError && known.code === 'cairn.unavailable' && !res.get('Retry-After'))
      res.set('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    sendProblem(res, known, docsUrl);
  };
}
