import type { Request } from 'express';
import type { z } from 'zod';
import { CairnError, parseOrThrow } from '@cairn/errors';

/** The JSON body of a request, validated; refuses other content types with 415 (`sendAs` says what to send). */
export function jsonBody<S extends z.ZodType>(
  req: Request,
  schema: S,
  sendAs = 'Send the body as application/json.',
): z.output<S> {
  if (!req.is('application/json')) {
    throw new CairnError('cairn.validation.unsupported_media_type', sendAs);
  }
  return parseOrThrow(schema, req.body ?? {}, 'request body');
}

export function queryParams<S extends z.ZodType>(req: Request, schema: S): z.output<S> {
  return parseOrThrow(schema, req.query, 'query parameters');
}
