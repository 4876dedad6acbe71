import type { EventOf } from '@cairn/events';
import type { Batches } from './app/batches.js';

/** Durable consumer of asset.signed (one per purpose, stable across deploys). */
export const ANCHOR_SIGNED_CONSUMER = 'anchor-signed';
export const ANCHOR_SIGNED_TYPES = ['asset.signed'] as const;

/**
 * The safety net of the signer's Enqueue call: every signed manifest with the anchor layer is enqueued from its
 * asset.signed event too (a repeat is a no-op, and costs no transaction when this process took the call), so an
 * anchor service that was down loses nothing.
 */
export function enqueueSigned(batches: Batches) {
  return async (event: EventOf<'asset.signed'>): Promise<void> => {
    const { anchor, asset_id: assetId, manifest_id: manifestId, manifest_digest: manifestDigest } = event.data;
    if (!anchor || manifestDigest === undefined) return;
    await batches.enqueueOnce({ tenantId: event.tenant_id, assetId, manifestId, manifestDigest });
  };
}
