import type { RequestHandler } from 'express';
import { CairnError } from '@cairn/errors';
import { addLogContext } from '@cairn/logging';
import { scopeAllows, type Scope } from '@cairn/catalog';
import type { TenantDirectory } from '../adapters/tenant-directory.js';
import './types.js';

const DETAIL = {
  malformed: 'The Authorization header must be "Bearer <API key>".',
  unknown: 'The API key is not valid.',
  revoked: 'The API key has been revoked.',
  expired: 'The API key has expired.',
} as const;

export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/** Requires a valid, unexpired, unrevoked key; sets req.auth. */
export function authenticate(tenants: TenantDirectory): RequestHandler {
  return async (req, _res, next) => {
    const token = bearerToken(req.header('authorization'));
    if (!token)
      return next(
        new CairnError(
          'cairn.auth.invalid_key',
          req.header('authorization')
            ? DETAIL.malformed
            : 'An API key is required: send "Authorization: Bearer <API key>".',
        ),
      );
    const result = await tenants.authenticate(token);
    if ('error' in result) return next(new CairnError('cairn.auth.invalid_key', DETAIL[result.error]));
    req.auth = result;
    addLogContext({ tenant_id: result.tenant.tenantId });
    next();
  };
}

/** Requires the authenticated key's scope to grant `needed`. */
export function requireScope(needed: Scope): RequestHandler {
  return (req, _res, next) => {
    const auth = req.auth;
    if (!auth) return next(new CairnError('cairn.auth.invalid_key'));
    if (!scopeAllows(auth.scope, needed))
      return next(
        new CairnError(
          'cairn.auth.forbidden',
          `This key's scope "${auth.scope}" does not allow this operation; it needs "${needed}".`,
        ),
      );
    next();
  };
}
