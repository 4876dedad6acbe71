import type { CallbackSigner, LocalSigner } from '@contentauth/c2pa-node';
import type { ManifestInput, SignedManifest } from '../../app/ports.js';

export {
  EMBEDDABLE_MIME_TYPES,
  isEmbeddableMimeType,
  isSidecarMimeType,
  SIDECAR_MIME_TYPES,
  type EmbeddableMimeType,
  type SidecarMimeType,
  type SignableMimeType,
} from '../../domain/media-types.js';
export type { GenerationMetadata } from '../../domain/metadata.js';
export type { SoftBindingInput, ThumbnailInput } from '../../app/ports.js';

export type C2paSigner = CallbackSigner | LocalSigner;

export interface BuildAndSignInput extends ManifestInput {
  signer: C2paSigner;
}

export type BuildAndSignResult = SignedManifest;
