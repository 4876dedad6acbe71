import { sendBinary, sendText } from './http-answers.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { answerTimeStampRequest, type TsaResponderDeps } from '../domain/pki/time-stamp-answer.js';
import { timeStampRejection } from '../domain/pki/time-stamp-token.js';
import { readBody } from './ocsp-responder.js';

// Cairn's time-stamping authority over HTTP: the answers themselves are built in domain/pki/time-stamp-answer.ts.

/** A TimeStampReq is under 100 bytes with a SHA-512 imprint and a nonce; anything this large is not one. */
const MAX_REQUEST_BYTES = 4 * 1024;
const QUERY_TYPE = 'application/timestamp-query';
const REPLY_TYPE = 'application/timestamp-reply';

function sendReply(res: ServerResponse, body: Buffer): void {
  sendBinary(res, REPLY_TYPE, body, 'no-store');
}

/**
 * A token bucket: `perSecond` tokens a second, at most `2 × perSecond` held. Each public grant costs an ECDSA
 * signature (about 2 ms here), so the bucket is what bounds the CPU an outside caller can take from the signer.
 */
export class GrantBudget {
  readonly #perSecond: number;
  readonly #capacity: number;
  readonly #now: () => number;
  #tokens: number;
  #at: number;

  constructor(perSecond: number, now: () => number = () => performance.now()) {
    this.#perSecond = perSecond;
    this.#capacity = Math.max(1, 2 * perSecond);
    this.#now = now;
    this.#tokens = this.#capacity;
    this.#at = now();
  }

  /** Takes a token; false when none is left (the caller answers 429). */
  take(): boolean {
    const now = this.#now();
    this.#tokens = Math.min(this.#capacity, this.#tokens + ((now - this.#at) / 1000) * this.#perSecond);
    this.#at = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}

function normalizeBasePath(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/**
 * node:http handler for `<basePath>`; every other path goes to `other` (the OCSP responder, which shares the
 * listener), or is 404 without one.
 */
export function createTsaHandler(
  deps: TsaResponderDeps,
  other?: (req: IncomingMessage, res: ServerResponse) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  const base = normalizeBasePath(deps.basePath ?? '/tsa');
  const own = deps.ownPath === undefined ? undefined : normalizeBasePath(deps.ownPath);
  const rate = deps.publicRequestsPerSecond;
  const budget = rate === undefined || rate === 0 ? undefined : new GrantBudget(rate);
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'POST') return sendText(res, 405, 'method not allowed', { Allow: 'POST' });
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== QUERY_TYPE) return sendText(res, 415, `send ${QUERY_TYPE}`, { Connection: 'close' });
    const body = await readBody(req, MAX_REQUEST_BYTES);
    if (body === 'too_large') return sendText(res, 413, 'request too large', { Connection: 'close' });
    sendReply(res, await answerTimeStampRequest(body, deps));
  };
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const isOwn = own !== undefined && path === own;
    const isPublic = path === base || path === `${base}/`;
    if (isPublic && rate === 0) return sendText(res, 404, 'not found');
    if (!isOwn && !isPublic) {
      if (other) return other(req, res);
      return sendText(res, 404, 'not found');
    }
    // Checked before the body is read: a caller over its share costs a header parse, not a signature.
    if (!isOwn && budget && !budget.take()) {
      return sendText(res, 429, 'too many time-stamp requests; retry later', {
        'Retry-After': '1',
        Connection: 'close',
      });
    }
    handle(req, res).catch((error: unknown) => {
      deps.onError?.(error);
      if (!res.headersSent) sendReply(res, timeStampRejection('systemFailure'));
      else res.destroy();
    });
  };
}

/**
 * The URL the signer's own signs reach its TSA at: its listener directly (loopback when it listens on every
 * interface), not TSA_PUBLIC_URL, which may lead through an ingress the signer need not be able to reach.
 */
export function localTsaUrl(listenHost: string, port: number, basePath: string): string {
  const any = ['', '0.0.0.0', '::', '[::]'].includes(listenHost);
  const host = any
    ? '127.0.0.1'
    : listenHost.includes(':') && !listenHost.startsWith('[')
      ? `[${listenHost}]`
      : listenHost;
  return `http://${host}:${port}${normalizeBasePath(basePath)}`;
}
