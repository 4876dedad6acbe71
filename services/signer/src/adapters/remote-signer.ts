import { createHmac } from 'node:crypto';
import { CairnError } from '@cairn/errors';
import { boundedRequest } from '@cairn/outbound';
import { es256Raw, verifiesEs256 } from '../domain/es256.js';
import type { KeyBackend, RemoteKeyOptions } from '../app/ports.js';

const MAX_ANSWER_BYTES = 16 * 1024;

/**
 * A tenant's own key, held by its own signing endpoint (BYOK). For each signature Cairn POSTs
 * `{"credential_id", "alg": "ES256", "to_be_signed": <base64>}` with `Cairn-Timestamp` and
 * `Cairn-Signature: sha256=<hex HMAC-SHA256(timestamp + "." + body, secret)>`, and expects
 * `{"signature": <base64 raw r‖s, 64 bytes, or DER>}`. The address passed the outbound policy when it was
 * registered and is checked again at connect time; no redirect is followed; one deadline. Any failure is
 * 503 cairn.signer.unavailable, as for Cairn's own key backends.
 *
 * The answer is verified against the registered leaf certificate before c2pa-rs gets it: an endpoint that does not
 * hold that key (a tenant that registered someone else's published chain) fails the sign here, before anything is
 * stored, anchored or billed, instead of yielding a manifest whose signature fails ("Tampered") under the name of
 * the certificate's owner.
 */
export function remoteKeyBackend(options: RemoteKeyOptions): KeyBackend {
  return {
    kind: 'remote',
    sign: async (tbs: Buffer) => {
      const body = Buffer.from(
        JSON.stringify({ credential_id: options.credentialId, alg: 'ES256', to_be_signed: tbs.toString('base64') }),
      );
      const timestamp = String(Math.floor(Date.now() / 1000));
      const mac = createHmac('sha256', options.hmacSecret).update(`${timestamp}.`).update(body).digest('hex');
      const answer = await boundedRequest(options.url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'Cairn-Timestamp': timestamp,
          'Cairn-Signature': `sha256=${mac}`,
        },
        body,
        timeoutMs: options.timeoutMs,
        maxBytes: MAX_ANSWER_BYTES,
        policy: options.policy,
      });
      const refuse = (why: string) =>
        new CairnError(
          'cairn.signer.unavailable',
          `The tenant's signing endpoint could not sign (${why}); retry later.`,
        );
      if (!answer.ok) throw refuse(answer.error);
      if (answer.status !== 200) throw refuse(`it answered HTTP ${answer.status}`);
      let signature: Buffer;
      try {
        const parsed = JSON.parse(answer.body.toString('utf8')) as { signature?: unknown };
        if (typeof parsed.signature !== 'string') throw new Error('no signature');
        signature = Buffer.from(parsed.signature, 'base64');
      } catch {
        throw refuse('its answer is not {"signature": <base64>}');
      }
      const raw = es256Raw(signature);
      if (!raw) throw refuse('its signature is neither 64 raw bytes nor a DER ECDSA signature');
      if (!verifiesEs256(options.leafPublicKey, tbs, raw))
        throw new CairnError(
          'cairn.signer.unavailable',
          `The signature your endpoint returned does not verify against the registered certificate of ${options.credentialId}: it was not made with that certificate's key. The sign was refused: no asset was recorded, anchored or billed. Fix the endpoint, or register the certificate of the key it holds.`,
        );
      return raw;
    },
  };
}
