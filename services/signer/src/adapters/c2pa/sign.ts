// Builds the manifest and signs the asset with c2pa-node 0.8.
//
// How c2pa-node returns things (read from its Builder.js / neon_builder.rs): `sign` (LocalSigner, synchronous)
// and `signAsync` (CallbackSigner) both RETURN the manifest store bytes (the JUMBF c2pa-rs embedded) and write
// the signed asset into `output.buffer` of a `{ buffer: null }` destination object.
import { Builder, CallbackSigner, type LocalSigner } from '@contentauth/c2pa-node';
import { CairnError } from '@cairn/errors';
import { C2paSignError } from '../../domain/c2pa-failures.js';
import { buildManifestPlan, type ManifestDefinition } from './manifest-definition.js';
import { activeManifestLabel } from './manifest-label.js';
import { THUMBNAIL_RESOURCE_ID } from './labels.js';
import {
  isEmbeddableMimeType,
  isSidecarMimeType,
  type BuildAndSignInput,
  type BuildAndSignResult,
  type C2paSigner,
} from './types.js';

export { C2paSignError } from '../../domain/c2pa-failures.js';

/**
 * c2pa-rs settings for every Cairn signature. The thumbnail is off because c2pa-rs decoding and re-encoding
 * the image is ~90% of sign time (STACK-NOTES §13); callers supply one made from pixels they already decoded.
 * Verify-after-sign is off: the result is read back by tests, and in production by the verifier.
 */
export const SIGN_SETTINGS = JSON.stringify({
  builder: { thumbnail: { enabled: false } },
  verify: { verify_after_sign: false },
});

/**
 * The time-stamping authority failed the sign (unreachable, an HTTP error, a rejection or a token c2pa-rs refused).
 * c2pa-rs requests the time-stamp itself while it signs, and reports a failure as a plain error whose message is
 * its TimeStampError's; those messages are what tells it apart from a file it cannot sign.
 */
export class C2paTimeStampError extends Error {
  override readonly name = 'C2paTimeStampError';
}

const TIME_STAMP_FAILURE =
  /time ?stamp|http resolver|service responded with an HTTP error|nonce mismatch|unable to complete HTTP request|^decode error \(/i;

/** What a sign whose time-stamp failed answers: retry later (503), never a manifest without its time-stamp. */
export function timeStampUnavailable(cause: unknown): CairnError {
  return new CairnError(
    'cairn.signer.unavailable',
    'The time-stamping authority did not answer; nothing was signed. Retry later.',
    {},
    { cause },
  );
}

interface DestinationBuffer {
  buffer: Buffer | null;
}

function derToPem(der: Buffer): string {
  return `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{1,64}/g, '$&\n')}-----END CERTIFICATE-----\n`;
}

/**
 * `Builder.sign` (the LocalSigner path) hashes and rewrites the whole asset on the JS thread: a 64 MiB WAV
 * blocks the signer's event loop for ~470 ms. `signAsync` does that work on c2pa-node's tokio threads (max
 * loop stall ~80 ms, the buffer copies). So a LocalSigner is driven through a CallbackSigner that only asks it
 * for the raw signature (`LocalSigner.sign`, microseconds). c2pa-node hands LocalSigner certs out as DER but
 * parses CallbackSigner certs as PEM, hence the conversion. Made per call: the CallbackSigner pins a Neon
 * channel until it is garbage-collected, and caching it would pin the LocalSigner for good.
 */
function asCallbackSigner(local: LocalSigner): CallbackSigner {
  const tsaUrl = local.timeAuthorityUrl();
  return CallbackSigner.newSigner(
    {
      alg: local.alg(),
      certs: [Buffer.from(local.certs().map(derToPem).join(''))],
      reserveSize: local.reserveSize(),
      ...(tsaUrl ? { tsaUrl } : {}),
      directCoseHandling: false,
    },
    async (data: Buffer) => local.sign(data),
  );
}

async function runSign(
  builder: Builder,
  signer: C2paSigner,
  asset: Buffer,
  mimeType: string,
): Promise<{ signed: Buffer; manifestStore: Buffer }> {
  const destination: DestinationBuffer = { buffer: null };
  const callbackSigner = signer instanceof CallbackSigner ? signer : asCallbackSigner(signer);
  const manifestStore = await builder.signAsync(callbackSigner, { buffer: asset, mimeType }, destination);
  if (!destination.buffer) throw new C2paSignError('c2pa-node returned no signed asset');
  return { signed: destination.buffer, manifestStore };
}

/** Creates the Builder for a definition; exported for tests that compare against c2pa-rs defaults. */
export function newBuilder(definition: ManifestDefinition, settings: string = SIGN_SETTINGS): Builder {
  // c2pa-node declares the definition as @contentauth/c2pa-types' Manifest, which is not installed here, so
  // the parameter type resolves to an untyped import; ManifestDefinition is the subset c2pa-rs accepts.
  return Builder.withJson(definition, settings);
}

export async function buildAndSign(input: BuildAndSignInput): Promise<BuildAndSignResult> {
  const sidecar = isSidecarMimeType(input.mimeType);
  if (!sidecar && !isEmbeddableMimeType(input.mimeType)) {
    throw new C2paSignError(`c2pa-node cannot embed a manifest in ${String(input.mimeType)}`);
  }
  const plan = buildManifestPlan(input);
  let result: { signed: Buffer; manifestStore: Buffer };
  try {
    const builder = newBuilder(plan.definition);
    if (plan.intent) builder.setIntent(plan.intent);
    // No handler embeds into these: c2pa-rs then binds the whole asset with a data hash and returns the store alone.
    if (sidecar) builder.setNoEmbed(true);
    if (input.thumbnail) {
      await builder.addResource(THUMBNAIL_RESOURCE_ID, {
        buffer: input.thumbnail.bytes,
        mimeType: input.thumbnail.mimeType,
      });
    }
    result = await runSign(builder, input.signer, input.asset, input.mimeType);
  } catch (error) {
    if (error instanceof C2paSignError) throw error;
    // c2pa-node errors carry the c2pa-rs error variant in `name` (e.g. `C2pa(CoseCertExpiration)`).
    const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    if (input.signer.timeAuthorityUrl() && error instanceof Error && TIME_STAMP_FAILURE.test(error.message)) {
      throw new C2paTimeStampError(`time-stamping failed: ${error.message}`, { cause: error });
    }
    throw new C2paSignError(`C2PA signing failed: ${detail}`, { cause: error });
  }
  return { ...result, manifestLabel: activeManifestLabel(result.manifestStore) };
}
