import { CairnError } from '@cairn/errors';
import type { signerV1 } from '@cairn/proto';
import { C2paInputError, C2paSignError } from '../../domain/c2pa-failures.js';
import type { SignableMimeType } from '../../domain/media-types.js';
import type { GenerationMetadata } from '../../domain/metadata.js';
import type { ActiveSigningKey } from '../ports.js';
import { timed, type EmbeddedWatermark, type PipelineDeps, type SignedBytes } from './deps.js';

/** One file to sign: its bytes, type, thumbnail (images) and the watermark it carries (its soft binding). */
export interface C2paInput {
  asset: Buffer;
  mimeType: SignableMimeType;
  thumbnail?: Buffer;
  watermark?: EmbeddedWatermark;
}

export type SignWithC2pa = (input: C2paInput) => Promise<SignedBytes>;

/**
 * The C2PA step of one sign: the manifest names its own id and asset (com.cairn.record), the recipe's source
 * type, the metadata and the watermark (a soft binding, and the c2pa.watermarked.bound action naming it with its
 * algorithm and key id); c2pa-rs parses and rewrites the container in a child process, the key signs here.
 */
export function c2paStep(
  deps: PipelineDeps,
  plan: {
    recipe: signerV1.RecipeSpec;
    metadata: GenerationMetadata;
    title: string;
    assetId: string;
    manifestId: string;
    active: ActiveSigningKey;
  },
): SignWithC2pa {
  // Every manifest carries an RFC 3161 time-stamp (Cairn's TSA or TSA_URL): signatures outlive their certificate.
  const tsa = deps.tsaUrl ? { tsaUrl: deps.tsaUrl } : {};
  return (input) =>
    timed(deps, 'c2pa', () => {
      const definition = {
        asset: input.asset,
        mimeType: input.mimeType,
        claimGenerator: { name: 'cairn' as const, version: deps.version },
        title: plan.title,
        record: { assetId: plan.assetId, manifestId: plan.manifestId },
        ...(plan.recipe.digitalSourceType ? { digitalSourceType: plan.recipe.digitalSourceType } : {}),
        metadata: plan.metadata,
        ...(input.watermark
          ? {
              softBinding: {
                alg: input.watermark.algorithm,
                value: input.watermark.payloadHex,
                keyId: input.watermark.keyId,
              },
            }
          : {}),
        ...(input.thumbnail ? { thumbnail: { bytes: input.thumbnail, mimeType: 'image/jpeg' as const } } : {}),
      };
      return deps.c2pa.buildAndSign(definition, plan.active, tsa);
    });
}

/**
 * An audio or video upload is signed as it is; c2pa-rs refuses a container it cannot parse, which is the upload's fault
 * (a truncated or mislabelled file), so that is a 400, never a 500. A key backend's failure reaches here as its
 * own error (503), not as a C2paSignError.
 */
export async function signAsUploaded(input: C2paInput, sign: SignWithC2pa): Promise<SignedBytes> {
  try {
    return await sign(input);
  } catch (error) {
    if (error instanceof C2paInputError || error instanceof C2paSignError) {
      throw new CairnError(
        'cairn.sign.unsupported_mime',
        `The file looks like ${input.mimeType} but its container cannot be read (${error.message}).`,
      );
    }
    throw error;
  }
}
