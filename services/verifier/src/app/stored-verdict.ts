import { create } from '@bufbuild/protobuf';
import { manifestUrl } from '@cairn/config';
import { CairnError, isCairnError } from '@cairn/errors';
import { verifierV1 } from '@cairn/proto';
import type { KeptVerdict, StoredReport, StoredResult, VerdictRecords } from './ports.js';
import type { TrustLists } from './trust-lists.js';
import { verify, type VerifyDeps } from './verify/index.js';

/** A stored verdict and the validation report made from the same reading (absent for verdicts kept before reports). */
export interface StoredVerdict {
  result: StoredResult;
  report?: StoredReport;
}

export interface StoredVerdictDeps extends VerifyDeps {
  /** The default list's digest too: a kept verdict is stale once it changes. */
  trust: TrustLists;
  results: VerdictRecords;
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
  options: { background?: boolean; report?: boolean } = {},
): Promise<StoredVerdict | null> {
  const now = Date.now();
  const kept = await deps.results.get(manifestId);
  const trust = await deps.trust.defaultDigest();
  const usable = kept ?? undefined;
  const answer = (k: KeptVerdict): StoredVerdict => ({ result: k.result, ...(k.report ? { report: k.report } : {}) });
  // A report is asked of a verdict kept before reports were: computed again, so report and verdict share a reading.
  const reportMissing = options.report === true && !usable?.report;
  if (usable && !reportMissing && isFresh(usable, trust, now, deps.freshForMs)) return answer(usable);
  // Cairn's copy of the file is gone (its retention ended): the last verdict computed from it is the record.
  if (usable && usable.expiresAt.getTime() <= now) return answer(usable);

  const manifestUri = manifestUrl(deps.publicBaseUrl, manifestId);
  let outcome: Awaited<ReturnType<typeof verify>>;
  try {
    // The report is made with every stored verdict: a later GET answers it from the reading this verdict came from.
    outcome = await verify(
      options.background ? withBackgroundDetection(deps) : deps,
      create(verifierV1.VerifyRequestSchema, { tenantId: '', input: { case: 'manifestUri', value: manifestUri } }),
      { report: true },
    );
  } catch (error) {
    // The file's retention ended, or a dependency failed: the last verdict computed from it still stands.
    if (usable) return answer(usable);
    if (isCairnError(error) && error.code === 'cairn.not_found') return null;
    throw error;
  }
  // A signal service that blipped must not replace a complete verdict with an inconclusive one.
  if (outcome.verdict.status === 'inconclusive' && usable) return answer(usable);
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
    .save(result, {
      expiresAt,
      trustDigest: trust,
      anchorSettled: !outcome.anchorPending,
      ...(outcome.report ? { report: outcome.report } : {}),
    })
    .catch((error: unknown) => deps.logger.warn({ err: error, manifest_id: manifestId }, 'could not keep the verdict'));
  return { result, ...(outcome.report ? { report: outcome.report } : {}) };
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
