import type { Event } from '@cairn/events';
import type { Tx } from '@cairn/db';
import { indexSignedAsset, type IndexDeps } from './app/index-asset.js';

/** Durable consumer of asset.signed (one per purpose, stable across deploys). */
export const INDEX_CONSUMER = 'softbinding-index';
export const INDEX_TYPES = ['asset.signed'] as const;

/** The indexing consumer: the fingerprints of each signed asset whose recipe enables soft binding. */
export function indexHandler(deps: IndexDeps): (event: Event<'asset.signed'>, tx: Tx) => Promise<void> {
  return indexSignedAsset(deps);
}
