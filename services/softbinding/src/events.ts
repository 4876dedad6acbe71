import type { GenService } from '@bufbuild/protobuf/codegenv2';
import type { BlobStore } from '@cairn/blob';
import type { EventEnvelope } from '@cairn/bus';
import type { Tx } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import type { signerV1 } from '@cairn/proto';
import type { ServiceClient } from '@cairn/rpc';
import type { FingerprintIndex } from './db/fingerprints.js';
import { pdqFingerprinter } from './domain/pdq.js';
import { indexHashes } from './domain/variants.js';

type SignerMethods = typeof signerV1.SignerService extends GenService<infer M> ? M : never;

export const INDEX_CONSUMER = 'softbinding-index';

/**
 * Indexes the fingerprints of every signed image whose recipe enables soft binding. Runs in the idempotent
 * consumer's transaction (tenant set, event id claimed): a redelivered asset.signed indexes nothing twice.
 */
export function indexSignedAsset(deps: { signer: ServiceClient<SignerMethods>; blobs: BlobStore; index: FingerprintIndex; logger: Logger }) {
  return async (event: EventEnvelope, tx: Tx): Promise<void> => {
    const data = event.data;
    if (data.soft_binding === false || typeof data.media_type !== 'string' || !data.media_type.startsWith('image/')) return;
    const assetId = String(data.asset_id);
    const { asset } = await deps.signer.getAsset({ tenantId: event.tenant_id, assetId });
    const bytes = asset?.blobKey ? await deps.blobs.getBuffer(asset.blobKey) : null;
    if (!asset || !bytes) {
      deps.logger.warn({ asset_id: assetId }, 'signed asset no longer available; not indexed');
      return;
    }
    const hashes = await indexHashes(pdqFingerprinter, bytes);
    await deps.index.add(
      tx,
      hashes.map((h) => ({
        tenantId: event.tenant_id,
        assetId,
        manifestId: String(data.manifest_id),
        manifestUri: String(data.manifest_uri),
        verifierUrl: String(data.verifier_url),
        alg: pdqFingerprinter.alg,
        variant: h.variant,
        bits: h.bits,
        quality: h.quality,
      })),
    );
  };
}
