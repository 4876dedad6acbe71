// The tenant's side of BYOK (docs/decisions/0026, 0027): its own signing endpoint and the proof of possession it
// registers with, shared by the tests that register a tenant-held key.
import {
  createHash,
  createHmac,
  createPrivateKey,
  generateKeyPairSync,
  sign as ecdsaSign,
  timingSafeEqual,
  X509Certificate,
} from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** 'wrong_key': a well-formed ES256 signature, by a key that is not the registered certificate's. */
export type EndpointMode = 'sign' | 'fail' | 'wrong_key';

/** A running endpoint; `secret` is set once Cairn has shown the HMAC secret, `mode` can change mid-test. */
export interface SigningEndpoint {
  url: string;
  close(): Promise<void>;
  requests: number;
  badMacs: number;
  secret: string;
  mode: EndpointMode;
}

/** The tenant's own signing service: checks Cairn's HMAC, signs ES256 with the key only it holds. */
export async function signingEndpoint(key: string): Promise<SigningEndpoint> {
  const state = { requests: 0, badMacs: 0, secret: '', mode: 'sign' as EndpointMode };
  const otherKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      state.requests += 1;
      const body = Buffer.concat(chunks);
      const expected = Buffer.from(
        `sha256=${createHmac('sha256', state.secret)
          .update(`${String(req.headers['cairn-timestamp'])}.`)
          .update(body)
          .digest('hex')}`,
      );
      const given = Buffer.from(String(req.headers['cairn-signature'] ?? ''));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        state.badMacs += 1;
        return void res.writeHead(401).end();
      }
      if (state.mode === 'fail') return void res.writeHead(500).end();
      const { to_be_signed } = JSON.parse(body.toString('utf8')) as { to_be_signed: string };
      const signature = ecdsaSign('sha256', Buffer.from(to_be_signed, 'base64'), {
        key: state.mode === 'wrong_key' ? otherKey : createPrivateKey(key),
        dsaEncoding: 'ieee-p1363',
      });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ signature: signature.toString('base64') }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(state, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sign`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

/**
 * What a tenant that holds the leaf key signs to register it: ES256 over
 * `cairn-byok-registration\n<tenant_id>\n<hex SHA-256 of the leaf DER>` (the README's bytes, spelled out here).
 */
export function proofOfPossession(
  tenantId: string,
  leafCertPem: string,
  privateKeyPem: string,
  encoding: 'ieee-p1363' | 'der' = 'ieee-p1363',
): string {
  const leafSha256 = createHash('sha256').update(new X509Certificate(leafCertPem).raw).digest('hex');
  const message = Buffer.from(`cairn-byok-registration\n${tenantId}\n${leafSha256}`, 'utf8');
  return ecdsaSign('sha256', message, { key: privateKeyPem, dsaEncoding: encoding }).toString('base64');
}
