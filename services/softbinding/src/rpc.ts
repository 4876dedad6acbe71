import type { softbindingV1 } from '@cairn/proto';
import type { ImplOf } from '@cairn/rpc';
import { compareContent } from './app/compare-content.js';
import { lookup, type LookupDeps } from './app/lookup.js';
import { ALGORITHMS } from './domain/algorithms.js';
import {
  checkReceipt,
  deleteStoredManifest,
  findBindings,
  getReceipt,
  getStoredManifest,
  putBinding,
  storeManifest,
  type RepositoryDeps,
} from './app/repository.js';

/** cairn.softbinding.v1.SoftBindingService. */
export function softbindingHandlers(
  deps: LookupDeps & RepositoryDeps,
): ImplOf<typeof softbindingV1.SoftBindingService> {
  return {
    supportedAlgorithms: async () => ({
      algorithms: ALGORITHMS.map((a) => ({
        alg: a.alg,
        kind: 'fingerprint',
        mediaTypes: [...a.mediaTypes],
        valueHexDigits: a.valueHexDigits,
      })),
    }),
    lookup: async (request) => {
      const matches = await lookup(deps, request);
      return {
        matches: matches.map((m) => ({
          assetId: m.asset_id,
          manifestUri: m.manifest_uri,
          verifierUrl: m.verifier_url,
          distance: m.distance,
          similarity: m.similarity,
          alg: m.alg,
        })),
      };
    },
    compareContent: (request) => compareContent(deps, request),
    storeManifest: (request) => storeManifest(deps, request),
    getStoredManifest: async (request) => ({ manifestStore: await getStoredManifest(deps, request.manifestId) }),
    deleteStoredManifest: async (request) => {
      await deleteStoredManifest(deps, request.tenantId, request.manifestId);
      return {};
    },
    putBinding: async (request) => {
      await putBinding(deps, request);
      return {};
    },
    findBindings: async (request) => ({ manifestIds: await findBindings(deps, request) }),
    getReceipt: async (request) => {
      const answer = await getReceipt(deps, request.manifestId);
      return { receiptJson: answer.receiptJson, verified: answer.verified, error: answer.verified ? '' : answer.error };
    },
    verifyReceipt: async (request) => {
      const verdict = await checkReceipt(deps, request.manifestId, request.receiptJson);
      return { verified: verdict.verified, error: verdict.verified ? '' : verdict.error };
    },
  };
}
