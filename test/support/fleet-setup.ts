// What every way of starting the whole fleet in a sandbox shares: the in-process stack (stack.ts), the fleet of
// processes for the benches (tools/bench/support/fleet.ts) and the replica fleet (replica-fleet.ts). Loads no
// service code, so that what talks to a fleet of processes can import it.
import { databaseRole, SERVICE_NAMES, type ServiceName } from '@cairn/config';
import { APP_ROLE, PG_ADMIN_URL, provisionServiceRoles } from '@cairn/testing';

/**
 * Start order, dependencies first: the gateway authenticates, and billing and audit read plans, through the tenant
 * service; the verifier reads the signer's trust anchors; the signer calls the watermark service.
 */
export const FLEET_ORDER: ServiceName[] = [
  'tenant',
  'watermark',
  'signer',
  'verifier',
  'softbinding',
  'anchor',
  'billing',
  'audit',
  'webhook',
  'gateway',
];

/**
 * One database role per service on the sandbox's database, each owning its own schema, as in the chart: a query
 * that strays into another service's schema fails here as it would in production.
 */
export function provisionFleetRoles(databaseName: string): Promise<void> {
  return provisionServiceRoles(
    PG_ADMIN_URL,
    databaseName,
    APP_ROLE,
    SERVICE_NAMES.map((name) => ({ schema: name, role: databaseRole(name) })),
  );
}
