import { apiRequester, createSandbox, type ApiRequest, type Sandbox } from '@cairn/testing';
import { startService, type RunningService } from '@cairn/runtime';
import { gatewayService } from '../src/service.js';

export interface GatewayHarness {
  sandbox: Sandbox;
  service: RunningService;
  baseUrl: string;
  request: ApiRequest;
  /** Onboards a fresh tenant and returns its admin key. */
  onboard(plan?: 'free' | 'developer' | 'growth'): Promise<{ tenant_id: string; api_key: string; key_id: string }>;
  stop(): Promise<void>;
}

let counter = 0;

/** A real gateway process-in-a-test: real Postgres, Redis and NATS, isolated in its own sandbox. */
export async function startGateway(overrides: NodeJS.ProcessEnv = {}): Promise<GatewayHarness> {
  const sandbox = await createSandbox({ ONBOARD_RATE_LIMIT_PER_MINUTE: '10000', ...overrides });
  const service = await startService(gatewayService(sandbox.env));
  const baseUrl = `http://127.0.0.1:${service.endpoints.http}`;
  const request = apiRequester(baseUrl);
  return {
    sandbox,
    service,
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
      await sandbox.dispose();
    },
  };
}

export async function problemOf(
  res: Response,
): Promise<{ type: string; title: string; status: number; detail: string; code: string; request_id: string }> {
  if (res.headers.get('content-type')?.split(';')[0] !== 'application/problem+json')
    throw new Error(`not a problem: ${res.status} ${res.headers.get('content-type')} ${await res.text()}`);
  return (await res.json()) as never;
}
