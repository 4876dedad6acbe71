import { X509Certificate } from 'node:crypto';

export interface CheckedChain {
  chainPem: string[];
  subject: string;
  notAfter: Date;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * A BYOK certificate chain as c2pa-rs will carry it: PEM, leaf first, each certificate signed by the next, the
 * leaf valid now with an EC P-256 key (the signature Cairn asks the remote signer for is ES256). Returns why not
 * as a string.
 */
export function checkCredentialChain(bundle: string, now = new Date()): CheckedChain | string {
  const pems = bundle.match(PEM_CERT) ?? [];
  if (pems.length === 0) return 'certificate_chain_pem holds no PEM certificate';
  if (pems.length > 5) return 'certificate_chain_pem holds more than 5 certificates';
  let certs: X509Certificate[];
  try {
    certs = pems.map((pem) => new X509Certificate(pem));
  } catch {
    return 'certificate_chain_pem holds a certificate that cannot be parsed';
  }
  const leaf = certs[0]!;
  if (leaf.ca) return 'the first certificate must be the signing (leaf) certificate, not a CA';
  const key = leaf.publicKey;
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
    return 'the leaf key must be EC P-256 (signatures are ES256)';
  if (new Date(leaf.validFrom) > now || new Date(leaf.validTo) < now)
    return `the leaf certificate is not valid now (${leaf.validFrom} – ${leaf.validTo})`;
  for (let i = 0; i + 1 < certs.length; i++) {
    const child = certs[i]!;
    const issuer = certs[i + 1]!;
    if (!child.checkIssued(issuer) || !child.verify(issuer.publicKey))
      return `certificate ${i + 1} is not issued by certificate ${i + 2}`;
  }
  return {
    chainPem: pems.map((p) => `${p}\n`),
    subject: leaf.subject.replace(/\n/g, ', '),
    notAfter: new Date(leaf.validTo),
  };
}
