import type { GenService } from '@bufbuild/protobuf/codegenv2';
import type { softbindingV1 } from '@cairn/proto';
import type { ServiceImpl } from '@cairn/rpc';
import { lookup, type LookupDeps } from './app/lookup.js';
import { ALGORITHMS } from './domain/algorithms.js';

type Methods = typeof softbindingV1.SoftBindingService extends GenService<infer M> ? M : never;

/** cairn.softbinding.v1.SoftBindingService. */
export function softbindingHandlers(deps: LookupDeps): ServiceImpl<Methods> {
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
  };
}
