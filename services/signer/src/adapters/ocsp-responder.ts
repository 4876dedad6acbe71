import { sendBinary, sendText } from './http-answers.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerOcspRequest, ocspStatusOnly, type OcspResponderDeps } from '../domain/pki/ocsp-response.js';

// The OCSP responder's HTTP side (RFC 6960 Appendix A, RFC 5019): the answers themselves are built in
// domain/pki/ocsp-response.ts.

const MAX_REQUEST_BYTES = 16 * 1024;
const OCSP_RESPONSE_TYPE = 'application/ocsp-response';

function normalizeBasePath(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed === '' ? '' : trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/** GET form (RFC 6960 Appendix A.1): the URL-encoded base64 of the DER request; base64url accepted too. */
function decodeGetRequest(encoded: string): Buffer | undefined {
  let text: string;
  try {
    text = decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return undefined;
  const der = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return der.length > 0 ? der : undefined;
}

/** The request body, or `too_large` as soon as it passes `limit` bytes (nothing more is buffered). */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        done = true;
        resolve('too_large');
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!done) resolve(Buffer.concat(chunks));
    });
    req.on('error', reject);
  });
}

function sendOcsp(res: ServerResponse, body: Buffer, cacheable: boolean): void {
  // GET answers may sit in HTTP caches (RFC 5019 §6); keep that short so a revocation shows quickly.
  sendBinary(
    res,
    OCSP_RESPONSE_TYPE,
    body,
    cacheable ? 'max-age=60, public, no-transform, must-revalidate' : 'no-store',
  );
}

/**
 * node:http handler: POST `<basePath>` with an `application/ocsp-request` body, or
 * GET `<basePath>/<url-encoded base64 request>` (also `/<request>`, see below). Anything else is
 * 404/405/413 (plain HTTP errors, since it is not an OCSP request at all). Meant for a server of its own
 * (startOcspServer), not to be mounted next to other routes.
 */
export function createOcspHandler(deps: OcspResponderDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const base = normalizeBasePath(deps.basePath ?? '/ocsp');
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'POST') {
      if (path !== base && path !== `${base}/`) return sendText(res, 404, 'not found');
      const body = await readBody(req, MAX_REQUEST_BYTES);
      if (body === 'too_large') return sendText(res, 413, 'request too large', { Connection: 'close' });
      return sendOcsp(res, await answerOcspRequest(body, deps), false);
    }
    if (req.method === 'GET') {
      const underBase = path.startsWith(`${base}/`);
      // c2pa-rs builds its GET URL by URL-joining the request onto the AIA URL, which replaces the last
      // path segment when the URL has no trailing slash: http://host/ocsp becomes http://host/<request>.
      // The responder has its own port, so a request at the root is accepted as well.
      const encoded = underBase ? path.slice(base.length + 1) : path.slice(1);
      if (encoded.length > (MAX_REQUEST_BYTES * 4) / 3 + 4) return sendText(res, 414, 'request too large');
      const der = decodeGetRequest(encoded);
      if (!der)
        return underBase ? sendOcsp(res, ocspStatusOnly('malformedRequest'), false) : sendText(res, 404, 'not found');
      return sendOcsp(res, await answerOcspRequest(der, deps), true);
    }
    return sendText(res, 405, 'method not allowed', { Allow: 'GET, POST' });
  };
  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      deps.onError?.(error);
      if (!res.headersSent) sendOcsp(res, ocspStatusOnly('internalError'), false);
      else res.destroy();
    });
  };
}

export interface OcspServer {
  readonly server: Server;
  readonly port: number;
  close(): Promise<void>;
}

/** Listens with `handler` on host:port (port 0 picks a free one). */
export function startOcspServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  host: string,
  port: number,
): Promise<OcspServer> {
  const server = createServer(handler);
  // OCSP requests are a few hundred bytes: a client that takes longer than this is not a client.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      resolve({
        server,
        port: address.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
