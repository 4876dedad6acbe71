import { CairnError } from '@cairn/errors';
import { checkMediaLimits, sniffMediaType, SNIFF_BYTES, type MediaProbe, type SniffedType } from '@cairn/media';
import type { signerV1 } from '@cairn/proto';
import type { GenerationMetadata } from '../../domain/metadata.js';
import { parseSignMetadata } from '../../domain/metadata.js';
import { timed, type PipelineDeps, type SignRequest } from './deps.js';

/** An upload the sign will work on: read once, its type known by its bytes, within the media limits. */
export interface AcceptedUpload {
  recipe: signerV1.RecipeSpec;
  metadata: GenerationMetadata;
  upload: Buffer;
  sniffed: SniffedType;
  /** What the headers declare (pixels, duration), read before any decoder allocates. */
  probe: MediaProbe | null;
}

/** Step 1: the recipe and metadata checked, the upload read and sniffed, its declared size held to the limits. */
export async function acceptUpload(deps: PipelineDeps, request: SignRequest): Promise<AcceptedUpload> {
  const recipe = request.recipe;
  if (!recipe) throw new CairnError('cairn.sign.invalid_recipe', 'The recipe is missing.');
  const metadata = parseSignMetadata(request.metadata);
  const upload = await timed(deps, 'read', () => deps.blobs.getBuffer(request.uploadBlobKey));
  if (!upload) throw new CairnError('cairn.validation.invalid_body', 'The upload is gone; send the asset again.');
  const sniffed = sniffMediaType(upload.subarray(0, SNIFF_BYTES));
  if (!sniffed || !recipe.mediaTypes.includes(sniffed.mediaType)) {
    throw new CairnError(
      'cairn.sign.unsupported_mime',
      `${sniffed ? `This file is ${sniffed.mediaType} (by its content)` : 'This file’s type is not recognised'}; recipe ${recipe.recipeId} accepts ${recipe.mediaTypes.join(', ')}.`,
    );
  }
  // Before any parser or decoder allocates: what the headers declare (pixels, duration) against the limits.
  const probe = await timed(deps, 'decode', () => checkMediaLimits(upload, sniffed, deps.mediaLimits));
  return { recipe, metadata, upload, sniffed, probe };
}
