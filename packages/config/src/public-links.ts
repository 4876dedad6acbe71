/**
 * The addresses Cairn gives the outside world, built from PUBLIC_BASE_URL (the gateway's public address). One place,
 * so a manifest_uri the signer writes, the link the verifier reports and the route the gateway serves cannot drift
 * apart, and a base configured with a trailing slash never yields `//` in a signed manifest.
 */

/**
 * `path` on the public base URL, whether or not the base was configured with a trailing slash; the empty path
 * gives the base itself without one.
 */
export function publicUrl(base: string, path: '' | `/${string}`): string {
  return `${base.replace(/\/$/, '')}${path}`;
}

/** A manifest store's address (GET /v1/manifests/{id}): the manifest_uri written into signed assets. */
export function manifestUrl(base: string, manifestId: string): string {
  return publicUrl(base, `/v1/manifests/${manifestId}`);
}

/** An asset's public verification page (GET /v/{id}): the verifier_url. */
export function verifierPageUrl(base: string, assetId: string): string {
  return publicUrl(base, `/v/${assetId}`);
}

/** The signed file's download (GET /v1/assets/{id}/content): the asset_url. */
export function assetContentUrl(base: string, assetId: string): string {
  return publicUrl(base, `/v1/assets/${assetId}/content`);
}

/**
 * A page of the documentation site (DOCS_URL: its own base, by default PUBLIC_BASE_URL/docs), `page` possibly with a
 * `#fragment`: the onboarding's next steps and a problem's `type`.
 */
export function docsUrl(docsBase: string, page: `/${string}`): string {
  return publicUrl(docsBase, page);
}

/** An asynchronous job's status (GET /v1/jobs/{id}): the poll_url of a 202. */
export function jobUrl(base: string, jobId: string): string {
  return publicUrl(base, `/v1/jobs/${jobId}`);
}
