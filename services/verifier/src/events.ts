import type { EventOf } from '@cairn/events';
import type { Tx } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import type { NewVerdicts } from './app/new-verdicts.js';
import { storedVerdict, type StoredVerdictDeps } from './app/stored-verdict.js';
import type { VerdictRecords } from './app/ports.js';

export const RESULTS_CONSUMER = 'verifier-results';
export const RESULTS_EVENT_TYPES = ['asset.signed', 'anchor.confirmed', 'certificate.revoked'] as const;

/**
 * Keeps the stored verdicts (app/stored-verdict.ts) in step with the facts that change them. A signed asset gets
 * its verdict at once, while Cairn still keeps its file. A revoked signing certificate may be any manifest's, so
 * all verdicts are marked for recomputation; a confirmed anchor batch turns "pending" into a match, so those
 * still waiting for theirs. Marked verdicts are recomputed on their next read. A revocation also replaces the token
 * the verifiers' kept OCSP answers depend on (app/verify/signal-cache.ts), so every replica drops them on its next
 * verify; a failure to do so fails the handler and the event is delivered again.
 */
export function verifierResultEvents(
  deps: StoredVerdictDeps & { results: VerdictRecords; logger: Logger },
  newVerdicts?: Pick<NewVerdicts, 'add'>,
) {
  return async (event: EventOf<(typeof RESULTS_EVENT_TYPES)[number]>, _tx: Tx): Promise<void> => {
    // The shared token first: a stored verdict recomputed once it is marked must not reuse an answer kept before.
    if (event.type === 'certificate.revoked') {
      await deps.signalEpochs.advance('revocation');
      await deps.results.markStale('all');
    } else if (event.type === 'anchor.confirmed') await deps.results.markStale('anchor_pending');
    else {
      // Best effort: a verdict not made now is made on its first read. Nobody waits on this one: its watermark
      // detection runs in the watermark service's background lane, yielding the CPU to the next signs.
      // With VERIFY_NEW_VERDICT_QUIET_MS the service queues it (app/new-verdicts.ts) until signing pauses.
      if (newVerdicts) return newVerdicts.add(event.data.manifest_id);
      await storedVerdict(deps, event.data.manifest_id, { background: true }).catch((error: unknown) =>
        deps.logger.warn(
          { err: error, manifest_id: event.data.manifest_id },
          'could not compute the stored verdict of a new asset',
        ),
      );
    }
  };
}
