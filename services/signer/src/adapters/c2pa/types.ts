import type { CallbackSigner, LocalSigner } from '@contentauth/c2pa-node';
import type { SidecarMediaType } from '@cairn/media';

/**
 * MIME types c2pa-node 0.8 (c2pa-rs 0.90.1 asset handlers: jpeg, png, riff, bmff, mp3, flac, gif, tiff) embeds a
 * manifest into. OGG and WebM are not among them (STACK-NOTES §13): those get a sidecar manifest elsewhere.
 */
export const EMBEDDABLE_MIME_TYPES = [
  'image/jpeg',
  'image/png',
  'image/webp',
  'image/gif',
  'image/tiff',
  'image/avif',
  'image/heic',
  'image/heif',
  'audio/wav',
  'audio/wave',
  'audio/x-wav',
  'audio/vnd.wave',
  'audio/mpeg',
  'audio/mp3',
  'audio/flac',
  'audio/mp4',
  'video/mp4',
  'video/quicktime',
  'video/x-m4v',
  'video/x-msvideo',
] as const;

export type EmbeddableMimeType = (typeof EMBEDDABLE_MIME_TYPES)[number];

const EMBEDDABLE = new Set<string>(EMBEDDABLE_MIME_TYPES);

/**
 * MIME types signed with a sidecar manifest (c2pa-rs "no embed", `c2pa.hash.data` over all the bytes;
 * docs/decisions/0008-sidecar-manifests.md: text generation events bound to the UTF-8 bytes, OGG and WebM). One list,
 * in @cairn/media, for signer and verifier.
 */
export {
  SIDECAR_MEDIA_TYPES as SIDECAR_MIME_TYPES,
  isSidecarMediaType as isSidecarMimeType,
  type SidecarMediaType as SidecarMimeType,
} from '@cairn/media';
export type SignableMimeType = EmbeddableMimeType | SidecarMediaType;

/** Narrows a sniffed MIME type to one buildAndSign embeds into. */
export function isEmbeddableMimeType(mimeType: string): mimeType is EmbeddableMimeType {
  return EMBEDDABLE.has(mimeType);
}

/** The sign metadata of the API (all optional strings). Never carries prompt text, only its hash. */
export interface GenerationMetadata {
  generator?: string;
  model?: string;
  /** `sha256:<64 hex>` of the prompt. */
  prompt_hash?: string;
  /** ISO 8601 UTC. */
  created_at?: string;
  creator?: string;
  legal_entity?: string;
  legal_case_ref?: string;
}

/** The watermark a sign embedded: recorded as the soft-binding assertion and the `c2pa.watermarked.bound` action. */
export interface SoftBindingInput {
  /** Soft-binding algorithm id, e.g. `cairn-sync-v2`. */
  alg: string;
  /** Payload hex, as the watermark service reports it. */
  value: string;
  /** Id of the watermark key the mark was embedded with; empty or absent for an unkeyed algorithm. */
  keyId?: string;
}

export interface ThumbnailInput {
  bytes: Buffer;
  mimeType: 'image/jpeg';
}

export type C2paSigner = CallbackSigner | LocalSigner;

export interface BuildAndSignInput {
  asset: Buffer;
  mimeType: SignableMimeType;
  signer: C2paSigner;
  claimGenerator: { name: 'cairn'; version: string };
  title?: string;
  /**
   * IPTC digital source type URI (e.g. http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia).
   * Set: the manifest records a `c2pa.created` action with it. Unset: the asset is recorded as opened from the
   * received file (`c2pa.opened` + parentOf ingredient), because a v2 claim without either action is invalid.
   * A generative type (trained algorithmic media or data, or a composite with it) adds `c2pa.ai-disclosure`.
   */
  digitalSourceType?: string;
  metadata: GenerationMetadata;
  softBinding?: SoftBindingInput;
  thumbnail?: ThumbnailInput;
  /** The Cairn asset and manifest this signature is for, written as the signed `com.cairn.record` assertion. */
  record?: { assetId: string; manifestId: string };
}

export interface BuildAndSignResult {
  /** The asset with the manifest store embedded (sidecar types: the asset unchanged). */
  signed: Buffer;
  /** The manifest store (JUMBF) exactly as embedded, or the sidecar; served as `application/c2pa` at manifest_uri. */
  manifestStore: Buffer;
  /** Label of the new (active) manifest, e.g. `urn:c2pa:<uuid>`. */
  manifestLabel: string;
}
