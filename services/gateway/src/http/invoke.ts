import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Runs a middleware from inside another, as Express would: an async handler that rejects (a dependency that
 * throws, such as the tenant service being away) has its error passed to `next`. Called bare, its rejection would
 * go nowhere: the request would never be answered and Node would end the process on the unhandled rejection.
 */
export function invoke(handler: RequestHandler, req: Request, res: Response, next: NextFunction): void {
  try {
    const result: unknown = handler(req, res, next);
    if (result instanceof Promise) result.catch(next);
  } catch (error) {
    next(error);
  }
}
