import { CallbackSigner, type Builder, type DestinationAsset, type SourceAsset } from '@contentauth/c2pa-node';
import { CairnError } from '@cairn/errors';
import type { ActiveSigningKey } from '../../app/ports.js';

export interface C2paSignerOptions {
  /** RFC 3161 time-stamp authority; none by default (the claim then carries no trusted signing time). */
  readonly tsaUrl?: string;
  /** Bytes reserved for the COSE signature box: certificate chain + signature + headroom. */
  readonly reserveSize?: number;
}

const DEFAULT_RESERVE_SIZE = 10_240;

/**
 * A c2pa-node signer over the active key. c2pa-rs builds the COSE_Sign1 itself (directCoseHandling: false)
 * and asks us only for the ES256 signature of its Sig_structure, which the backend returns as raw r‖s.
 * Certificates go in as PEM, leaf first: c2pa-node 0.8.0 rejects DER buffers ("COSE Signer does not contain
 * signing certificate").
 *
 * The signer keeps the key it was created with: a rotation while this signature is in flight does not
 * change the key under it.
 */
export function createC2paSigner(active: ActiveSigningKey, options: C2paSignerOptions = {}): CallbackSigner {
  const { signer, failure } = createTrappingSigner(active, options);
  failures.set(signer, failure);
  return signer;
}

// Keyed weakly: a signer is made per signature and must stay collectable (it pins a Neon channel until then).
const failures = new WeakMap<CallbackSigner, () => unknown>();

/**
 * The CairnError ('cairn.signer.unavailable') that the key backend threw while `signer` (from
 * createC2paSigner) was signing, if any. c2pa-rs replaces an error thrown by the signing callback with its own
 * generic one; call this where signAsync's rejection is caught, and rethrow what it returns, so the request
 * is answered 503 rather than 500.
 */
export function c2paSignerFailure(signer: CallbackSigner): CairnError | undefined {
  const failure = failures.get(signer)?.();
  return failure instanceof CairnError ? failure : undefined;
}

function createTrappingSigner(
  active: ActiveSigningKey,
  options: C2paSignerOptions,
): { signer: CallbackSigner; failure: () => unknown } {
  let failure: unknown;
  const signer = CallbackSigner.newSigner(
    {
      alg: 'es256',
      certs: active.chainPem.map((pem) => Buffer.from(pem, 'utf8')),
      reserveSize: options.reserveSize ?? DEFAULT_RESERVE_SIZE,
      ...(options.tsaUrl ? { tsaUrl: options.tsaUrl } : {}),
      directCoseHandling: false,
    },
    async (data: Buffer) => {
      try {
        return await active.backend.sign(data);
      } catch (error) {
        failure = error;
        throw error;
      }
    },
  );
  return { signer, failure: () => failure };
}

/**
 * Signs `source` into `dest` with `builder`. c2pa-rs replaces an error thrown by the signing callback with
 * its own generic one; this restores the backend's CairnError ('cairn.signer.unavailable') so the caller
 * can answer 503 rather than 500.
 */
export async function signWithC2pa(
  builder: Builder,
  active: ActiveSigningKey,
  source: SourceAsset,
  dest: DestinationAsset,
  options: C2paSignerOptions = {},
): Promise<Buffer> {
  const { signer, failure } = createTrappingSigner(active, options);
  try {
    return await builder.signAsync(signer, source, dest);
  } catch (error) {
    const cause = failure();
    if (cause instanceof CairnError) throw cause;
    throw error;
  }
}

/**
 * c2pa Reader/Builder settings trusting `trustAnchorsPem` (one or more PEM certificates). Keys must be
 * snake_case: c2pa-node passes the object to c2pa-rs as JSON unchanged and silently ignores camelCase keys.
 */
export function c2paTrustSettings(
  trustAnchorsPem: string,
  extra: { ocspFetch?: boolean } = {},
): {
  trust: { trust_anchors: string };
  verify: { verify_trust: true; ocsp_fetch?: boolean };
} {
  return {
    trust: { trust_anchors: trustAnchorsPem },
    verify: { verify_trust: true, ...(extra.ocspFetch === undefined ? {} : { ocsp_fetch: extra.ocspFetch }) },
  };
}
