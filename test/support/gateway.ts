import { afterAll, beforeAll } from '@jest/globals';
import { apiRequester, createSandbox, type ApiRequest, type Sandbox } from '@cairn/testing';
import type { RunningService } from '@cairn/runtime';
import { startFleetService } from './stack.js';

export interface GatewayHarness {
  sandbox: Sandbox;
  service: RunningService;
  /** The tenant service the gateway authenticates through. */
  tenant: RunningService;
  baseUrl: string;
  request: ApiRequest;
  /** Onboards a fresh tenant and returns its admin key. */
  onboard(plan?: 'free' | 'developer' | 'growth'): Promise<{ tenant_id: string; api_key: string; key_id: string }>;
  stop(): Promise<void>;
}

let counter = 0;

/**
 * A real gateway and the tenant service it authenticates through, in-process in one sandbox: real Postgres,
 * Redis and NATS (both connect as the sandbox's role; test/support/stack.ts gives each its own).
 */
export async function startGateway(overrides: NodeJS.ProcessEnv = {}): Promise<GatewayHarness> {
  const sandbox = await createSandbox({ ONBOARD_RATE_LIMIT_PER_MINUTE: '10000', ...overrides });
  const tenant = await startFleetService('tenant', sandbox.env);
  const service = await startFleetService('gateway', {
    ...sandbox.env,
    TENANT_GRPC_ADDR: `127.0.0.1:${tenant.grpcPort}`,
  });
  const baseUrl = `http://127.0.0.1:${service.endpoints.http}`;
  const request = apiRequester(baseUrl);
  return {
    sandbox,
    service,
    tenant,
    baseUrl,
    request,
    onboard: async (plan = 'developer') => {
      counter += 1;
      const res = await request('/v1/onboard', {
        method: 'POST',
        headers: { 'idempotency-key': `onboard-${sandbox.id}-${counter}-${Date.now()}` },
        json: {
          email: `ops${counter}@example.com`,
          tenant_name: `Tenant ${counter}`,
          plan,
          payment_method_id: plan === 'free' ? undefined : 'pm_card_visa',
        },
      });
      if (res.status !== 201) throw new Error(`onboard failed: ${res.status} ${await res.text()}`);
      return (await res.json()) as { tenant_id: string; api_key: string; key_id: string };
    },
    stop: async () => {
      await service.stop();
      await tenant.stop();
      await sandbox.dispose();
    },
  };
}

/**
 * A gateway for a whole test file, with one developer tenant whose admin key the tests use (`admin`): started in a
 * beforeAll registered here, stopped in an afterAll. Its fields are set once that beforeAll has run.
 */
export function gatewayForFile(): GatewayHarness & { admin: { tenant_id: string; api_key: string } } {
  // Filled in place, so a test file can hold the one object from load on (as it would its own `let`s).
  const gw = {} as GatewayHarness & { admin: { tenant_id: string; api_key: string } };
  beforeAll(async () => {
    Object.assign(gw, await startGateway());
    gw.admin = await gw.onboard('developer');
  });
  afterAll(() => gw.stop());
  return gw;
}

export async function problemOf(
  res: Response,
): Promise<{ type: string; title: string; status: number; detail: string; code: string; request_id: string }> {
  if (res.headers.get('content-type')?.split(';')[0] !== 'application/problem+json')
    throw new Error(`not a problem: ${res.status} ${await res.text()}`);
  return (await res.json()) as never;
}
