import type { Request, RequestHandler } from 'express';

/**
 * Each request must arrive whole within its own deadline (`deadlineFor`), measured from when its headers were read;
 * past it a 408 is answered if nothing was yet, and the connection is closed. It replaces node's server-wide
 * requestTimeout (set to 0 with it), which cannot give an upload PUT of several gigabytes longer than a JSON call.
 */
export function requestDeadline(deadlineFor: (req: Request) => number): RequestHandler {
  return (req, res, next) => {
    if (req.complete) return next();
    const timer = setTimeout(() => {
      if (req.complete) return;
      if (!res.headersSent) {
        res.writeHead(408, { connection: 'close', 'content-type': 'application/problem+json' });
        res.end(
          JSON.stringify({
            type: 'about:blank',
            title: 'Request Timeout',
            status: 408,
            detail: 'The request body did not arrive in time.',
          }),
        );
      }
      req.socket.destroy();
    }, deadlineFor(req));
    timer.unref();
    const clear = () => clearTimeout(timer);
    req.once('end', clear);
    req.once('close', clear);
    res.once('finish', clear);
    next();
  };
}

/**
 * An upload PUT's deadline: the usual one plus its size at `minBytesPerSecond`, its size being the Content-Length
 * it declares (the session holds it to its declared size) or, without one, the largest a session takes.
 */
export function uploadPutDeadlineMs(
  req: Request,
  options: { baseMs: number; maxSessionBytes: number; minBytesPerSecond: number },
): number {
  const declared = req.header('content-length');
  const size = declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : options.maxSessionBytes;
  return options.baseMs + Math.ceil((Math.min(size, options.maxSessionBytes) / options.minBytesPerSecond) * 1000);
}

export const isUploadPut = (req: Request): boolean =>
  req.method === 'PUT' && /^\/v1\/uploads\/[^/]+\/content$/.test(req.path);
