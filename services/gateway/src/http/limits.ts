import type { Request, RequestHandler, Response } from 'express';
import { createHash } from 'node:crypto';
import { CairnError } from '@cairn/errors';
import { parseApiKey } from '@cairn/ids';
import type { AuthFailureLimit } from '../adapters/auth-failures.js';
import { rateLimitHeaders, type RateLimitDecision } from '../domain/rate-limit.js';
import type { RedisRateLimiter } from '../adapters/rate-limit.js';
import { bearerToken } from './auth.js';
import './types.js';

/** Per-tenant limits from the tenant's row (sub-tenants have their own), with RateLimit-* headers always. */
export function tenantRateLimit(limiter: RedisRateLimiter): RequestHandler {
  return async (req, res, next) => {
    const tenant = req.auth?.tenant;
    if (!tenant) return next();
    const decision = await limiter.consume(`tenant:${tenant.tenantId}`, [
      { name: 'rps', policy: { limit: tenant.rateLimitRps, windowSeconds: 1 } },
      { name: 'daily', policy: { limit: tenant.rateLimitDaily, windowSeconds: 86_400, burst: tenant.rateLimitDaily } },
    ]);
    next(answered(res, decision, 'Rate limit exceeded for this tenant'));
  };
}

/** Sets the RateLimit-* headers every limited answer carries; the error to pass on when the limit refused. */
function answered(res: Response, decision: RateLimitDecision, exceeded: string): CairnError | undefined {
  res.set(rateLimitHeaders(decision));
  if (decision.allowed) return undefined;
  return new CairnError('cairn.ratelimit.exceeded', `${exceeded}; retry after ${decision.retryAfterSeconds} s.`);
}

/**
 * Per-client-address limits for unauthenticated endpoints. The address is hashed before it reaches Redis,
 * so no caller IP is stored.
 */
export function addressRateLimit(
  limiter: RedisRateLimiter,
  bucket: string,
  policy: { limit: number; windowSeconds: number },
): RequestHandler {
  return async (req, res, next) => {
    const address = clientAddressHash(req);
    const decision = await limiter.consume(`${bucket}:ip:${address}`, [
      { name: bucket, policy: { ...policy, burst: policy.limit } },
    ]);
    next(answered(res, decision, 'Too many requests from this address'));
  };
}

/** The client address, hashed so no caller IP reaches Redis. */
function clientAddressHash(req: Request): string {
  return createHash('sha256')
    .update(req.ip ?? req.socket.remoteAddress ?? 'unknown')
    .digest('hex')
    .slice(0, 32);
}

/**
 * Failed authentications per client address. Every request that carries an Authorization header is checked
 * first, with Redis reads and no database work, so a client guessing keys costs no transaction once over the
 * limit. Many clients may share one address (a company's egress, a carrier's NAT): a key that authenticated from
 * this address within the trust period is held only to its own failures there, so another client's guesses do
 * not lock it out; a key not yet seen from a locked address waits out the window, since it cannot be told apart
 * from a guess without the database. A 401 answered to it (any route, the optional-key verifies included) counts
 * one failure for the address and, for a well-formed key, one for that key id from the address.
 */
export function authFailureLimit(failures: AuthFailureLimit): RequestHandler {
  return async (req, res, next) => {
    const header = req.header('authorization');
    if (header === undefined) return next();
    const address = `ip:${clientAddressHash(req)}`;
    const keyId = parseApiKey(bearerToken(header) ?? '')?.keyId;
    const keySubject = keyId ? `${address}:${keyId}` : undefined;
    const check = await failures.admit(address, keySubject);
    const trusted = check.trusted;
    if (check.blocked) {
      res.set('Retry-After', String(check.retryAfterSeconds));
      return next(
        new CairnError(
          'cairn.ratelimit.exceeded',
          trusted
            ? `Too many failed authentications with this key id from this address; retry after ${check.retryAfterSeconds} s.`
            : `Too many failed authentications from this address; retry after ${check.retryAfterSeconds} s.`,
        ),
      );
    }
    res.once('finish', () => {
      if (res.statusCode === 401) {
        void failures.recordFailure(address);
        if (keySubject) void failures.recordFailure(keySubject);
      } else if (keySubject && req.auth) void failures.trust(keySubject);
    });
    next();
  };
}
