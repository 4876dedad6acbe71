import { waitFor } from '@cairn/testing';
import type { Stack } from './stack.js';

export interface UsageBody {
  period_start: string;
  period_end: string;
  spend_usd: number;
  spending_cap_usd: number | null;
  meters: Record<string, { used: number; limit: number; reserved?: number; overage?: number }>;
}

/**
 * GET /v1/usage once no meter holds a reservation: a synchronous sign's (a verify's) reservation is committed by
 * billing from asset.signed (asset.verified) after the answer (docs/decisions/0022-billing-settled-from-events.md), so
 * usage read right after one must wait for that event.
 */
export async function settledUsage(stack: Stack, key: string): Promise<UsageBody> {
  return waitFor('usage settled (no reservation open)', async () => {
    const res = await stack.request('/v1/usage', { key });
    if (res.status !== 200) throw new Error(`GET /v1/usage answered ${res.status}: ${await res.text()}`);
    const body = (await res.json()) as UsageBody;
    return Object.values(body.meters).some((m) => (m.reserved ?? 0) > 0) ? undefined : body;
  });
}
