import { create } from '@bufbuild/protobuf';
import { CairnError, isCairnError } from '@cairn/errors';
import { verifierV1 } from '@cairn/proto';
import type { KeptVerdict, ResultStore, StoredResult } from '../store/results.js';
import { verify, type VerifyDeps } from './verify/index.js';

export interface StoredVerdictDeps extends VerifyDeps {
  results: ResultStore;
  /** A kept verdict older than this is recomputed even when nothing announced a change (OCSP answers age, say). */
  freshForMs: number;
}

/**
 * The verdict about a Cairn manifest that everyone is shown (`/v/{asset_id}`, GET /v1/verify/{manifest_id}): the
 * verification of the asset as Cairn signed and keeps it, with the default trust list and no tenant. It is kept
 * and served until something that can change it changes — a revoked certificate or a confirmed anchor batch
 * (events mark the row stale), the default trust list (its digest), or age — then computed again from Cairn's
 * own copy. An upload never writes here. It is first computed when the asset is signed (events.ts), so it
 * outlives the file: after the file's retention the last verdict stays. Null when Cairn knows no such manifest.
 */
export async function storedVerdict(
  deps: StoredVerdictDeps,
  manifestId: string,
  options: { background?: boolean } = {},
): Promise<StoredResult | null> {
  const now = Date.now();
  const kept = await deps.results.get(manifestId);
  const trust = await deps.trust.defaultDigest();
  const usable = kept ?? undefined;
  if (usable && isFresh(usable, trust, now, deps.freshForMs)) return usable.result;
  // Cairn's copy of the file is gone (its retention ended): the last verdict computed from it is the record.
  if (usable && usable.expiresAt.getTime() <= now) return usable.result;

  const manifestUri = `${deps.publicBaseUrl.replace(/\/$/, '')}/v1/manifests/${manifestId}`;
  let outcome: Awaited<ReturnType<typeof verify>>;
  try {
    outcome = await verify(
      options.background ? withBackgroundDetection(deps) : deps,
      create(verifierV1.VerifyRequestSchema, { tenantId: '', input: { case: 'manifestUri', value: manifestUri } }),
    );
  } catch (error) {
    // The file's retention ended, or a dependency failed: the last verdict computed from it still stands.
    if (usable) return usable.result;
    if (isCairnError(error) && error.code === 'cairn.not_found') return null;
    throw error;
  }
  // A signal service that blipped must not replace a complete verdict with an inconclusive one.
  if (outcome.verdict.status === 'inconclusive' && usable) return usable.result;
  if (!outcome.assetId)
    throw new CairnError('cairn.internal_error', `Manifest ${manifestId} verified without its asset.`);
  const { matches: _publicOnly, ...verdict } = outcome.verdict;
  const result: StoredResult = {
    ...verdict,
    manifest_id: manifestId,
    asset_id: outcome.assetId,
    verified_at: outcome.verifiedAt,
  };
  const expiresAt = outcome.expiresAt ? new Date(outcome.expiresAt) : new Date(now + deps.freshForMs);
  await deps.results
    .save(result, { expiresAt, trustDigest: trust, anchorSettled: !outcome.anchorPending })
    .catch((error: unknown) => deps.logger.warn({ err: error, manifest_id: manifestId }, 'could not keep the verdict'));
  return result;
}

/**
 * The same verify, its image watermark detection asked as background work: the watermark service runs it on its
 * low-priority worker (same algorithm, same answer), so a verdict computed ahead of any reader (asset.signed)
 * yields the CPU to the signs and verifies that callers wait on.
 */
function withBackgroundDetection(deps: StoredVerdictDeps): StoredVerdictDeps {
  const { watermark } = deps;
  return {
    ...deps,
    watermark: {
      ...watermark,
      detectImage: (request, callOptions) => watermark.detectImage({ ...request, background: true }, callOptions),
    },
  };
}

function isFresh(kept: KeptVerdict, trustDigest: string, now: number, freshForMs: number): boolean {
  return !kept.stale && kept.trustDigest === trustDigest && now - kept.computedAt.getTime() < freshForMs;
}
