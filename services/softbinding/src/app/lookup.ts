import { blobKeyOf, parseBlobKey, type BlobStore } from '@cairn/blob';
import { CairnError } from '@cairn/errors';
import { isId } from '@cairn/ids';
import { checkMediaLimits, sniffMediaType, SNIFF_BYTES, type MediaLimits } from '@cairn/media';
import type { Fingerprinters, HashIndex, Indexes, LookupScope, PublicMatch } from './ports.js';
import { algorithmNamed, ALGORITHMS } from '../domain/algorithms.js';
import { AudioTooShortError, AudioTooSparseError } from '../domain/audio.js';
import { fromHex, HASH_BYTES, PDQ_ALG } from '../domain/pdq.js';
import { fingerprintText, signatureFromHex, TextFingerprintError, TEXT_ALG, lshBands } from '../domain/text.js';
import { LOOKUP_RADIUS } from '../domain/threshold.js';
import {
  MIN_FRAME_QUALITY,
  MIN_MATCHED_FRACTION,
  MIN_MATCHED_FRAMES,
  VIDEO_ALG,
  VIDEO_FRAME_RADIUS,
  VideoFingerprintError,
  type VideoFrameHash,
} from '../domain/video.js';

export type { Indexes } from './ports.js';

/** Turns a fingerprinting failure into what the caller can act on (never a 500 for a file we cannot read). */
function lookupError(error: unknown, what: string): CairnError {
  if (error instanceof CairnError) return error;
  if (error instanceof AudioTooShortError || error instanceof AudioTooSparseError)
    return new CairnError('cairn.validation.invalid_body', `Cannot look this audio up: ${error.message}.`);
  if (error instanceof TextFingerprintError)
    return new CairnError('cairn.validation.invalid_body', `Cannot look this text up: ${error.message}.`);
  if (error instanceof VideoFingerprintError) {
    return error.code === 'too_large' || error.code === 'no_frames'
      ? new CairnError('cairn.validation.invalid_body', `Cannot look this video up: ${error.message}.`)
      : new CairnError('cairn.verify.unsupported_file_type', `This video could not be decoded (${error.message}).`);
  }
  // ffmpeg's and any other decoder's failure alike: the file, not the service, is the problem.
  return new CairnError('cairn.verify.unsupported_file_type', `This ${what} could not be decoded.`);
}

const supported = () => ALGORITHMS.map((a) => a.mediaTypes.join(', ')).join('; ');

/** Lookup by content: the file's type (by its bytes) picks the fingerprint and the index. */
export async function lookupContent(
  indexes: Indexes,
  fingerprints: Fingerprinters,
  scope: LookupScope,
  bytes: Buffer,
  limit: number,
  mediaLimits: MediaLimits,
): Promise<PublicMatch[]> {
  const sniffed = sniffMediaType(bytes.subarray(0, SNIFF_BYTES));
  const algorithm = sniffed ? ALGORITHMS.find((a) => a.modality === sniffed.modality) : undefined;
  if (!sniffed || !algorithm)
    throw new CairnError('cairn.verify.unsupported_file_type', `Lookup by content reads ${supported()}.`);
  // Before any decoder allocates: what the headers declare (cairn.media.too_large).
  await checkMediaLimits(bytes, sniffed, mediaLimits);
  switch (algorithm.modality) {
    case 'image': {
      const hash = await fingerprints.imageHash(bytes).catch((error: unknown) => {
        throw lookupError(error, 'image');
      });
      return indexes.images.search(scope, hash.bits, LOOKUP_RADIUS, limit, PDQ_ALG);
    }
    case 'audio': {
      const fingerprint = await fingerprints.audio(bytes).catch((error: unknown) => {
        throw lookupError(error, 'audio');
      });
      return indexes.audio.search(scope, fingerprint, limit);
    }
    case 'video': {
      const frames = await fingerprints.videoFrames(bytes).catch((error: unknown) => {
        throw lookupError(error, 'video');
      });
      return searchVideo(indexes.images, scope, frames, limit);
    }
    case 'text': {
      let fingerprint;
      try {
        fingerprint = fingerprintText(bytes.toString('utf8'));
      } catch (error) {
        throw lookupError(error, 'text');
      }
      return indexes.text.search(scope, fingerprint, limit);
    }
    default:
      throw new CairnError('cairn.verify.unsupported_file_type', `Lookup by content reads ${supported()}.`);
  }
}

/** Lookup by a binding value of an algorithm that has one (a hash anyone holding the file can compute). */
export async function lookupBinding(
  indexes: Indexes,
  scope: LookupScope,
  binding: { alg: string; value: string },
  limit: number,
): Promise<PublicMatch[]> {
  const algorithm = algorithmNamed(binding.alg);
  const byValue = ALGORITHMS.filter((a) => a.valueHexDigits > 0).map((a) => a.alg);
  if (!algorithm || algorithm.valueHexDigits === 0) {
    throw new CairnError(
      'cairn.validation.invalid_body',
      `Lookup by value takes the algorithms ${byValue.join(', ')}; "${binding.alg}" is not one of them.`,
    );
  }
  if (binding.value.length !== algorithm.valueHexDigits || !/^[0-9a-f]+$/i.test(binding.value)) {
    throw new CairnError(
      'cairn.validation.invalid_body',
      `A ${algorithm.alg} binding value is ${algorithm.valueHexDigits} hex digits.`,
    );
  }
  if (algorithm.alg === TEXT_ALG) {
    const signature = signatureFromHex(binding.value);
    return indexes.text.search(scope, { signature, bands: lshBands(signature) }, limit);
  }
  if (algorithm.valueHexDigits === HASH_BYTES * 2)
    return indexes.images.search(scope, fromHex(binding.value), LOOKUP_RADIUS, limit, algorithm.alg);
  throw new CairnError('cairn.validation.invalid_body', `Lookup by value does not take ${algorithm.alg}.`);
}

/**
 * A video is found when enough of the query's frames (domain/video.ts: ≥ MIN_MATCHED_FRAMES and
 * ≥ MIN_MATCHED_FRACTION of the usable ones) each find a frame of it in the index. `distance` in a match is the
 * number of usable query frames that found none of that asset's frames.
 */
async function searchVideo(
  images: HashIndex,
  scope: LookupScope,
  frames: readonly VideoFrameHash[],
  limit: number,
): Promise<PublicMatch[]> {
  const usable = frames.filter((f) => f.quality >= MIN_FRAME_QUALITY);
  const found = new Map<string, { match: PublicMatch; frames: number }>();
  for (const frame of usable) {
    for (const match of await images.search(scope, frame.bits, VIDEO_FRAME_RADIUS, 50, VIDEO_ALG)) {
      const entry = found.get(match.asset_id);
      if (entry) entry.frames++;
      else found.set(match.asset_id, { match, frames: 1 });
    }
  }
  const out: PublicMatch[] = [];
  for (const { match, frames: matched } of found.values()) {
    const similarity = usable.length === 0 ? 0 : matched / usable.length;
    if (matched < MIN_MATCHED_FRAMES || similarity < MIN_MATCHED_FRACTION) continue;
    out.push({
      ...match,
      alg: VIDEO_ALG,
      distance: usable.length - matched,
      similarity: Math.round(similarity * 1000) / 1000,
    });
  }
  return out.sort((a, b) => b.similarity - a.similarity || a.asset_id.localeCompare(b.asset_id)).slice(0, limit);
}

export interface LookupDeps {
  blobs: Pick<BlobStore, 'getBuffer'>;
  indexes: Indexes;
  fingerprints: Fingerprinters;
  maxResults: number;
  mediaLimits: MediaLimits;
  /** Records a tenant's lookup (asset.lookup: the audit log, and the lookup meter's evidence). */
  recordLookup: (tenantId: string, matches: number) => Promise<void>;
}

export type LookupQuery =
  | { case: 'uploadBlobKey'; value: string }
  | { case: 'binding'; value: { alg: string; value: string } }
  | { case: undefined; value?: undefined };

/** A lookup, by an uploaded file or a binding value, for a tenant (its own assets) or the public. */
export async function lookup(
  deps: LookupDeps,
  request: { tenantId: string; query: LookupQuery; limit: number },
): Promise<PublicMatch[]> {
  if (request.tenantId && !isId('tenant', request.tenantId))
    throw new CairnError('cairn.validation.invalid_body', 'tenant_id must be a t_ id');
  const query = request.query;
  const limit = Math.min(Math.max(request.limit || deps.maxResults, 1), deps.maxResults);
  const scope = request.tenantId ? { tenantId: request.tenantId } : ('public' as const);
  let matches;
  if (query.case === 'uploadBlobKey') {
    // A tenant's lookup reads only that tenant's uploads; a public one any upload (the verifier looks up a
    // tenant's upload in the public scope too), never an asset, a manifest or a key outside the uploads.
    const upload = request.tenantId
      ? blobKeyOf(query.value, 'upload', request.tenantId)
      : parseBlobKey(query.value)?.kind === 'upload';
    if (!upload) throw new CairnError('cairn.validation.invalid_body', 'upload_blob_key must name an upload.');
    const bytes = await deps.blobs.getBuffer(query.value);
    if (!bytes) throw new CairnError('cairn.validation.invalid_body', 'The upload is gone; send the file again.');
    matches = await lookupContent(deps.indexes, deps.fingerprints, scope, bytes, limit, deps.mediaLimits);
  } else if (query.case === 'binding') {
    matches = await lookupBinding(deps.indexes, scope, query.value, limit);
  } else {
    throw new CairnError('cairn.validation.invalid_body', 'Send a file or a binding {alg, value}.');
  }
  // Recorded even with zero matches.
  if (request.tenantId) await deps.recordLookup(request.tenantId, matches.length);
  return matches;
}
