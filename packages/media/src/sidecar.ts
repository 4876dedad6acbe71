/**
 * Media types Cairn signs with a sidecar manifest (c2pa-rs cannot embed into them): the file is kept byte for
 * byte and the manifest, served at manifest_uri, binds it with a data hash over all its bytes. The signer signs
 * them so; the verifier reads them so.
 */
export const SIDECAR_MEDIA_TYPES = ['text/plain', 'audio/ogg', 'video/webm'] as const;
export type SidecarMediaType = (typeof SIDECAR_MEDIA_TYPES)[number];

const SIDECAR: ReadonlySet<string> = new Set(SIDECAR_MEDIA_TYPES);

export function isSidecarMediaType(mediaType: string): mediaType is SidecarMediaType {
  return SIDECAR.has(mediaType);
}
