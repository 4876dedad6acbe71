/** API key scopes and states: one definition for the tenant service, which issues keys, and the gateway, which checks them. */
export const SCOPES = ['admin', 'sign', 'verify', 'read'] as const;
export type Scope = (typeof SCOPES)[number];

/** What a key of each scope may do. `admin` manages the tenant and can do everything else too. */
const GRANTS: Record<Scope, ReadonlySet<Scope>> = {
  admin: new Set(SCOPES),
  sign: new Set(['sign', 'read']),
  verify: new Set(['verify', 'read']),
  read: new Set(['read']),
};

export function scopeAllows(held: Scope, needed: Scope): boolean {
  return GRANTS[held].has(needed);
}

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

export type KeyState = 'active' | 'revoked' | 'expired';

export function keyState(key: { revokedAt: Date | null; expiresAt: Date | null }, now = new Date()): KeyState {
  if (key.revokedAt) return 'revoked';
  if (key.expiresAt && key.expiresAt.getTime() <= now.getTime()) return 'expired';
  return 'active';
}
