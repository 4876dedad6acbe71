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
