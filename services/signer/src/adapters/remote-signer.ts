import { createHmac } from 'node:crypto';
import { CairnError } from '@cairn/errors';
import { boundedRequest, type DestinationPolicy } from '@cairn/outbound';
import type { KeyBackend } from '../pki/index.js';

export interface RemoteSignerOptions {
  url: string;
  credentialId: string;
  hmacSecret: string;
  timeoutMs: number;
  policy: DestinationPolicy;
}

const MAX_ANSWER_BYTES = 16 * 1024;

/**
 * A tenant's own key, held by its own signing endpoint (BYOK). For each signature Cairn POSTs
 * `{"credential_id", "alg": "ES256", "to_be_signed": <base64>}` with `Cairn-Timestamp` and
 * `Cairn-Signature: sha256=<hex HMAC-SHA256(timestamp + "." + body, secret)>`, and expects
 * `{"signature": <base64 raw r‖s, 64 bytes, or DER>}`. The address passed the outbound policy when it was
 * registered and is checked again at connect time; no redirect is followed; one deadline. Any failure is
 * 503 cairn.signer.unavailable, as for Cairn's own key backends.
 */
export function remoteKeyBackend(options: RemoteSignerOptions): KeyBackend {
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
      const raw = signature.length === 64 ? signature : derToRaw(signature);
      if (!raw) throw refuse('its signature is neither 64 raw bytes nor a DER ECDSA signature');
      return raw;
    },
  };
}

/** An ECDSA-Sig-Value (SEQUENCE of two INTEGERs) as the 64-byte r‖s COSE carries; undefined when malformed. */
function derToRaw(der: Buffer): Buffer | undefined {
  if (der.length < 8 || der[0] !== 0x30) return undefined;
  let at = 2;
  const parts: Buffer[] = [];
  for (let i = 0; i < 2; i++) {
    if (der[at] !== 0x02) return undefined;
    const length = der[at + 1]!;
    let value = der.subarray(at + 2, at + 2 + length);
    at += 2 + length;
    while (value.length > 32 && value[0] === 0) value = value.subarray(1);
    if (value.length > 32) return undefined;
    parts.push(Buffer.concat([Buffer.alloc(32 - value.length), value]));
  }
  return Buffer.concat(parts);
}
