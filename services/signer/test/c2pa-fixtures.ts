// Throwaway signing credentials for the C2PA tests: a one-level test CA and an ES256 leaf shaped the way
// c2pa-rs's certificate profile wants it (KU digitalSignature critical, EKU emailProtection, SKI/AKI,
// BasicConstraints CA:false). Generated per test run, never written to disk.
// @peculiar/x509 2.x needs a Reflect polyfill before it is imported (STACK-NOTES §8).
import 'reflect-metadata';
import { createPrivateKey, sign as cryptoSign, webcrypto, type KeyObject } from 'node:crypto';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import * as x509 from '@peculiar/x509';
import { CallbackSigner, LocalSigner } from '@contentauth/c2pa-node';

// @peculiar/x509 is typed against the DOM Crypto; node's webcrypto implements it.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const ES256 = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface TestCredential {
  caCertPem: string;
  leafCertPem: string;
  /** Leaf first, then the CA: the order c2pa-rs expects for x5chain. */
  certChainPem: string;
  /** PKCS#8 PEM of the leaf's private key. */
  privateKeyPem: string;
  leafSerialHex: string;
  /** The CA's key, for a test that answers OCSP about the leaf as its issuer. */
  caPrivateKey: webcrypto.CryptoKey;
}

export interface TestCredentialOptions {
  commonName?: string;
  organization?: string;
  /** Validity of the leaf; defaults to yesterday .. +30 days. */
  leafNotBefore?: Date;
  leafNotAfter?: Date;
  /** An OCSP responder URL written into the leaf's Authority Information Access. */
  ocspUrl?: string;
}

function pemOf(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der)
    .toString('base64')
    .replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${b64}-----END ${label}-----\n`;
}

function randomSerialHex(): string {
  // Positive 16-byte serial (top bit clear so DER does not need a leading zero byte).
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x01;
  return Buffer.from(bytes).toString('hex');
}

export async function makeTestCredential(options: TestCredentialOptions = {}): Promise<TestCredential> {
  const now = Date.now();
  const caKeys = await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify']);
  const leafKeys = await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify']);

  const caName = 'CN=Cairn Test Root CA, O=Cairn Test, C=US';
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerialHex(),
    name: caName,
    notBefore: new Date(now - 2 * DAY_MS),
    notAfter: new Date(now + 365 * DAY_MS),
    keys: caKeys,
    signingAlgorithm: ES256,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });

  const leafSerialHex = randomSerialHex();
  const cn = options.commonName ?? 'Cairn Test Signer';
  const org = options.organization ?? 'Cairn Test Org';
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: leafSerialHex,
    subject: `CN=${cn}, O=${org}, C=US`,
    issuer: ca.subject,
    notBefore: options.leafNotBefore ?? new Date(now - DAY_MS),
    notAfter: options.leafNotAfter ?? new Date(now + 30 * DAY_MS),
    publicKey: leafKeys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: ES256,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.emailProtection]),
      await x509.SubjectKeyIdentifierExtension.create(leafKeys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
      ...(options.ocspUrl ? [new x509.AuthorityInfoAccessExtension({ ocsp: options.ocspUrl })] : []),
    ],
  });

  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey);
  const caCertPem = ca.toString('pem') + '\n';
  const leafCertPem = leaf.toString('pem') + '\n';
  return {
    caCertPem,
    leafCertPem,
    certChainPem: leafCertPem + caCertPem,
    privateKeyPem: pemOf('PRIVATE KEY', pkcs8),
    leafSerialHex,
    caPrivateKey: caKeys.privateKey,
  };
}

export function localSignerFor(credential: TestCredential): LocalSigner {
  return LocalSigner.newSigner(Buffer.from(credential.certChainPem), Buffer.from(credential.privateKeyPem), 'es256');
}

/**
 * A CallbackSigner whose key never enters c2pa-rs: the shape the production signer uses with an HSM.
 * ES256 in COSE is the raw r||s form, hence ieee-p1363. c2pa-node 0.8 concatenates the `certs` buffers and
 * parses them as PEM (DER buffers fail with "COSE Signer does not contain signing certificate").
 */
export function callbackSignerFor(credential: TestCredential): CallbackSigner {
  const key: KeyObject = createPrivateKey(credential.privateKeyPem);
  return CallbackSigner.newSigner(
    { alg: 'es256', certs: [Buffer.from(credential.certChainPem)], reserveSize: 20_000, directCoseHandling: false },
    async (data: Buffer) => cryptoSign('sha256', data, { key, dsaEncoding: 'ieee-p1363' }),
  );
}

/**
 * A CallbackSigner holds a referenced Neon Channel (c2pa-node neon_signer.rs) until V8 collects it, which keeps
 * a short-lived process such as a jest worker alive for seconds after the last test. Tests that made callback
 * signers drop them and call this in afterAll. (A long-running signer service keeps its signer anyway.)
 */
export function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  const gc: unknown = runInNewContext('gc');
  if (typeof gc === 'function') (gc as () => void)();
}
