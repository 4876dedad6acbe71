import type { Logger } from '@cairn/logging';
import { compareContent, type RegisteredPoints } from '../domain/image/content-registration.js';
import type { MarkRecord } from './ports.js';

/**
 * The content check of a registered cairn-sync-v2 mark: is the picture it was read from, placed back on the
 * embedding grid, the content the mark was embedded in? The payload alone can be copied onto other content.
 * Undefined when no description was kept (its write failed after the embedding): callers compare fingerprints.
 */
export function contentConsistent(logger: Logger, mark: MarkRecord, registered: RegisteredPoints): boolean | undefined {
  const comparison = mark.content ? compareContent(registered, mark.content) : undefined;
  if (comparison)
    logger.debug(
      { watermark_id: mark.watermarkId, correlation: comparison.correlation, inside: comparison.inside },
      'content check of a cairn-sync-v2 mark',
    );
  return comparison?.consistent;
}
