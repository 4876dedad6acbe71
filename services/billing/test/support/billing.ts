import { CairnError } from '@cairn/errors';
import { billingV1 } from '@cairn/proto';
import { createClient, type ClientOf } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { createSandbox, type Sandbox } from '@cairn/testing';
import { billingService } from '../../src/service.js';

/**
 * The billing service on its own sandbox with a gRPC client. The expiry sweep is off (tests run it when they mean
 * to) and growth's image_sign costs $0.50, so spending caps are reached in a few reserves.
 */
export interface BillingFleet {
  sandbox: Sandbox;
  service: RunningService;
  billing: ClientOf<typeof billingV1.BillingService>;
  stop(): Promise<void>;
}

export async function startBilling(): Promise<BillingFleet> {
  const sandbox = await createSandbox({
    DATABASE_POOL_MAX: '20',
    BILLING_SWEEP_INTERVAL_MS: '0',
    BILLING_PRICES_JSON: JSON.stringify({ growth: { image_sign: 0.5 } }),
  });
  const service = await startService(billingService(sandbox.env)).catch(async (error: unknown) => {
    await sandbox.dispose();
    throw error;
  });
  const billing = createClient(billingV1.BillingService, `127.0.0.1:${service.grpcPort}`);
  return {
    sandbox,
    service,
    billing,
    async stop() {
      billing.close();
      await service.stop();
      await sandbox.dispose();
    },
  };
}

/** 'ok' when the call succeeds, else the cairn.* code it was refused with (anything else as text, so it shows). */
export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return error instanceof CairnError ? error.code : String(error);
  }
}
