import type { GenService } from '@bufbuild/protobuf/codegenv2';
import type { BlobStore } from '@cairn/blob';
import { newEvent } from '@cairn/events';
import { withTenant, type Database } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { isId } from '@cairn/ids';
import type { softbindingV1 } from '@cairn/proto';
import type { MediaLimits } from '@cairn/media';
import type { ServiceImpl } from '@cairn/rpc';
import type { Outbox } from '@cairn/runtime';
import { ALGORITHMS } from './domain/algorithms.js';
import { lookupBinding, lookupContent, type Indexes } from './lookup.js';

type Methods = typeof softbindingV1.SoftBindingService extends GenService<infer M> ? M : never;

/** cairn.softbinding.v1.SoftBindingService. */
export function softbindingHandlers(deps: {
  db: Database;
  blobs: BlobStore;
  indexes: Indexes;
  outbox: Outbox;
  maxResults: number;
  mediaLimits: MediaLimits;
}): ServiceImpl<Methods> {
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
      if (request.tenantId && !isId('tenant', request.tenantId))
        throw new CairnError('cairn.validation.invalid_body', 'tenant_id must be a t_ id');
      const query = request.query;
      const limit = Math.min(Math.max(request.limit || deps.maxResults, 1), deps.maxResults);
      const scope = request.tenantId ? { tenantId: request.tenantId } : ('public' as const);
      let matches;
      if (query.case === 'uploadBlobKey') {
        const bytes = await deps.blobs.getBuffer(query.value);
        if (!bytes) throw new CairnError('cairn.validation.invalid_body', 'The upload is gone; send the file again.');
        matches = await lookupContent(deps.indexes, scope, bytes, limit, deps.mediaLimits);
      } else if (query.case === 'binding') {
        matches = await lookupBinding(deps.indexes, scope, query.value, limit);
      } else {
        throw new CairnError('cairn.validation.invalid_body', 'Send a file or a binding {alg, value}.');
      }
      if (request.tenantId) {
        // Recorded (audit log, and the lookup meter's evidence) even with zero matches.
        await withTenant(deps.db, request.tenantId, (tx) =>
          deps.outbox.enqueue(
            tx,
            newEvent('asset.lookup', request.tenantId, { matches: matches.length, 'billing.meter': 'lookup' }),
          ),
        );
        void deps.outbox.flush();
      }
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
