import type { ServerResponse } from 'node:http';

/** A 200 with a binary body of `contentType` (an OCSP response, a time-stamp reply) and its caching rule. */
export function sendBinary(res: ServerResponse, contentType: string, body: Buffer, cacheControl: string): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', body.length);
  res.setHeader('Cache-Control', cacheControl);
  res.end(body);
}

/** A plain-text answer: the responders' refusals and health answers. */
export function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.end(text);
}
