/**
 * Billing rules of the tenant tree (one level: a parent and its sub-tenants). Each sub-tenant is metered on
 * its own plan's quotas; what keeps the tree honest is that only paying plans may have children (plans.ts
 * `subTenants`), a child's plan is never above its parent's, and a child's spending cap is set by its parent
 * and never above the parent's own cap.
 */

/** A spending cap in USD; null = no cap. */
export type SpendingCap = number | null;

/** Whether `child` fits under `parent`: anything fits under no cap; under a cap, only a cap no higher. */
export function capFitsUnder(parent: SpendingCap, child: SpendingCap): boolean {
  if (parent === null) return true;
  return child !== null && child <= parent;
}

/** The cap a new sub-tenant gets: the one asked for, or (when none is sent) its parent's. */
export function initialChildCap(parent: SpendingCap, requested: SpendingCap | undefined): SpendingCap {
  return requested === undefined ? parent : requested;
}

/**
 * Whether the caller may change the target's spending cap: a tenant without a parent sets its own; a
 * sub-tenant's cap is its parent's to set, never its own keys' (else a child escapes the budget it was given).
 */
export function mayChangeSpendingCap(
  actorTenantId: string,
  target: { tenantId: string; parentTenantId: string | null },
): boolean {
  return target.parentTenantId === null ? actorTenantId === target.tenantId : actorTenantId === target.parentTenantId;
}

/** The problem detail for a cap that does not fit, in the caller's words. */
export function capAboveParentDetail(parent: number, child: SpendingCap): string {
  const asked = child === null ? 'no cap (null)' : `$${child.toFixed(2)}`;
  return `A sub-tenant's spending_cap_usd must be at most its parent's cap of $${parent.toFixed(2)}; ${asked} is above it.`;
}
