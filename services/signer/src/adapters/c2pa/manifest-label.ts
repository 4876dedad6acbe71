import { activeManifestLabel as lastManifestLabel } from '@cairn/jumbf';

/**
 * The active manifest's label, read from the manifest store c2pa-rs just produced, so that signing does not
 * need a second (validating) Reader pass.
 */
export function activeManifestLabel(manifestStore: Buffer): string {
  const label = lastManifestLabel(manifestStore);
  if (!label) throw new Error('manifest store holds no manifest (or is not a JUMBF superbox)');
  return label;
}
