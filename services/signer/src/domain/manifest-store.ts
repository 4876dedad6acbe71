import { activeManifestLabel, childBoxes, readBox, writeBox } from '@cairn/jumbf';

/**
 * A manifest store holding only its active manifest (the last one): the store's own description box followed by
 * that manifest's superbox, byte for byte. Ingredient manifests the active one refers to are left out, as the C2PA
 * Soft Binding Resolution API's returnActiveManifest asks. A single-manifest store is answered as it is; null when
 * the bytes are not a manifest store.
 */
export function activeManifestOnly(store: Buffer): Buffer | null {
  const root = readBox(store, 0, store.length);
  const children = root && root.type === 'jumb' ? childBoxes(store, root) : [];
  const description = children[0];
  const manifests = children.filter((b) => b.type === 'jumb');
  const active = manifests.at(-1);
  if (!description || description.type !== 'jumd' || !active || !activeManifestLabel(store)) return null;
  if (manifests.length === 1) return store;
  return writeBox(
    'jumb',
    Buffer.concat([store.subarray(description.start, description.end), store.subarray(active.start, active.end)]),
  );
}
