import { anchorBatchStates } from '@cairn/proto';
import { timed, type PipelineDeps, type SignResult } from './deps.js';

/**
 * Anchoring never fails a sign: the asset is signed and recorded already. When the anchor service does not answer,
 * the result carries no `anchor` and a warning is logged; the asset.signed event (with the digest) still reaches
 * the anchor service, which enqueues it then, so the manifest is anchored all the same.
 */
export async function enqueueAnchor(
  deps: PipelineDeps,
  input: { tenantId: string; assetId: string; manifestId: string; manifestDigest: string },
): Promise<SignResult['anchor'] | undefined> {
  try {
    const queued = await timed(deps, 'anchor', () => deps.anchor!.enqueue(input, { deadlineMs: 3000 }));
    return { batchId: queued.batchId, status: anchorBatchStates.fromProto(queued.status) };
  } catch (error) {
    deps.logger?.warn(
      { err: error, asset_id: input.assetId, manifest_id: input.manifestId },
      'anchor service unavailable; the manifest is anchored from asset.signed instead',
    );
    return undefined;
  }
}
