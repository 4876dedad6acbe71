// Worker tasks run in the test's own thread (runImageTask), answering with their outcome or throwing: the tests
// assert on what an embed or a detect found, not on the worker's envelope.
import { runImageTask, type ImageAlgorithms } from '../../src/domain/image-tasks.js';
import type { RawImage } from '../../src/domain/image/raw-image.js';
import type { WatermarkKey } from '../../src/domain/keys.js';
import type { DetectOutcome, EmbedOutcome, WorkerRequest } from '../../src/domain/worker-protocol.js';

export type EmbedRequest = Omit<Extract<WorkerRequest, { op: 'embed' }>, 'id' | 'op'>;

/** An embed as a worker runs it; `pixelsOwned`: it may mark `request.image`'s pixels in place. */
export function embedTask(
  algorithms: ImageAlgorithms,
  request: EmbedRequest,
  { pixelsOwned = false }: { pixelsOwned?: boolean } = {},
): EmbedOutcome {
  const { response } = runImageTask(algorithms, { id: 1, op: 'embed', ...request }, { pixelsOwned });
  if (!response.ok || response.op !== 'embed') throw new Error('embed failed');
  return response.outcome;
}

/** A detect as a worker runs it, under `keys` in order. */
export function detectTask(algorithms: ImageAlgorithms, image: RawImage, keys: WatermarkKey[]): DetectOutcome {
  const { response } = runImageTask(algorithms, { id: 1, op: 'detect', image, keys });
  if (!response.ok || response.op !== 'detect') throw new Error('detect failed');
  return response.outcome;
}
