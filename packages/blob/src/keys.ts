// Blob keys, built and parsed in one place (docs/decisions/0007-identifiers-and-blob-keys.md). Every key the fleet
// writes is one of these shapes:
//
//   <owner>/uploads/<upload>            a request's upload (owner: the tenant id, or `public` for unauthenticated
//                                       verifies and lookups); deleted once the request or its job is done
//   <tenant>/assets/<asset>.<ext>       a signed asset (the signer writes it; asset.signed names it)
//   <tenant>/thumbnails/<asset>.jpg     the public page's thumbnail of a signed image
//   manifests/<manifest>.c2pa           a manifest store (public: /v1/manifests serves it to anyone)
//
// A key that arrives from outside the service holding it (an event's `blob_key`, a gRPC request's upload key) is
// parsed here, never used as it came: it must have one of these shapes and belong to the tenant it is used for, so
// no `..`, absolute path, unknown prefix or other tenant's key reaches the blob store.

/** The owner segment of uploads that belong to no tenant (public verify, the C2PA resolution API). */
export const PUBLIC_OWNER = 'public';

/** One segment of an id: letters, digits, `_` and `-` (ids are prefix + ULID; upload ids are bare ULIDs). */
const ID = /^[A-Za-z0-9_-]{1,128}$/;
/** A file extension as the signer writes it (jpg, png, mp4, txt, ...). */
const EXTENSION = /^[a-z0-9]{1,10}$/;

export type ParsedBlobKey =
  | { kind: 'upload'; key: string; owner: string; uploadId: string }
  | { kind: 'asset'; key: string; tenantId: string; assetId: string; extension: string }
  | { kind: 'thumbnail'; key: string; tenantId: string; assetId: string }
  | { kind: 'manifest'; key: string; manifestId: string };

export type BlobKeyKind = ParsedBlobKey['kind'];

function segment(value: string, what: string, pattern: RegExp = ID): string {
  if (!pattern.test(value)) throw new RangeError(`invalid ${what} for a blob key: ${JSON.stringify(value)}`);
  return value;
}

/** The keys Cairn writes. Each part is checked: a builder never makes a key the parser would refuse. */
export const blobKeys = {
  /** A request's upload, owned by a tenant or by PUBLIC_OWNER. */
  upload(owner: string, uploadId: string): string {
    return `${segment(owner, 'owner')}/uploads/${segment(uploadId, 'upload id')}`;
  },
  asset(tenantId: string, assetId: string, extension: string): string {
    return `${segment(tenantId, 'tenant id')}/assets/${segment(assetId, 'asset id')}.${segment(extension, 'extension', EXTENSION)}`;
  },
  thumbnail(tenantId: string, assetId: string): string {
    return `${segment(tenantId, 'tenant id')}/thumbnails/${segment(assetId, 'asset id')}.jpg`;
  },
  manifest(manifestId: string): string {
    return `manifests/${segment(manifestId, 'manifest id')}.c2pa`;
  },
} as const;

/** The shape of `key`, or undefined when it is none of the keys Cairn writes (traversal, absolute, unknown prefix). */
export function parseBlobKey(key: string): ParsedBlobKey | undefined {
  if (typeof key !== 'string' || key.length > 512) return undefined;
  const parts = key.split('/');
  if (parts.length === 2) {
    const [prefix, file] = parts as [string, string];
    const match = /^([A-Za-z0-9_-]{1,128})\.c2pa$/.exec(file);
    if (prefix === 'manifests' && match) return { kind: 'manifest', key, manifestId: match[1]! };
    return undefined;
  }
  if (parts.length !== 3) return undefined;
  const [owner, room, file] = parts as [string, string, string];
  if (!ID.test(owner)) return undefined;
  if (room === 'uploads') return ID.test(file) ? { kind: 'upload', key, owner, uploadId: file } : undefined;
  if (owner === PUBLIC_OWNER) return undefined; // only uploads may be public
  if (room === 'assets') {
    const match = /^([A-Za-z0-9_-]{1,128})\.([a-z0-9]{1,10})$/.exec(file);
    return match ? { kind: 'asset', key, tenantId: owner, assetId: match[1]!, extension: match[2]! } : undefined;
  }
  if (room === 'thumbnails') {
    const match = /^([A-Za-z0-9_-]{1,128})\.jpg$/.exec(file);
    return match ? { kind: 'thumbnail', key, tenantId: owner, assetId: match[1]! } : undefined;
  }
  return undefined;
}

/**
 * `key` parsed as a `kind` key of `owner` (a tenant id, or PUBLIC_OWNER for a public upload); undefined when it is
 * not one: malformed, another kind, or another tenant's. How a refusal is answered is the caller's (a 404, a
 * skipped event).
 */
export function blobKeyOf<K extends Exclude<BlobKeyKind, 'manifest'>>(
  key: string,
  kind: K,
  owner: string,
): Extract<ParsedBlobKey, { kind: K }> | undefined {
  const parsed = parseBlobKey(key);
  if (!parsed || parsed.kind !== kind) return undefined;
  const keyOwner = 'owner' in parsed ? parsed.owner : 'tenantId' in parsed ? parsed.tenantId : undefined;
  return keyOwner === owner ? (parsed as Extract<ParsedBlobKey, { kind: K }>) : undefined;
}
