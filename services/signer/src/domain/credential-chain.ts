import { createHash, X509Certificate } from 'node:crypto';
import { x509 } from './pki/x509.js';

export interface CheckedChain {
  chainPem: string[];
  subject: string;
  notAfter: Date;
  /** The leaf, whose key every signature of the credential must verify under. */
  leaf: X509Certificate;
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
    leaf,
  };
}

/** Names the purpose of a registration proof, so a signature made for anything else never passes as one. */
export const REGISTRATION_PROOF_CONTEXT = 'cairn-byok-registration';

/**
 * The bytes a tenant signs with the leaf's key to register it: `cairn-byok-registration\n<tenant_id>\n<hex SHA-256
 * of the leaf certificate's DER>` (UTF-8, no trailing newline). The tenant id binds the proof to the registering
 * tenant: a published certificate and a proof another tenant made for it do not register it anywhere else.
 */
export function registrationProofMessage(tenantId: string, leaf: X509Certificate): string {
  return `${REGISTRATION_PROOF_CONTEXT}\n${tenantId}\n${createHash('sha256').update(leaf.raw).digest('hex')}`;
}

/** What Cairn's own certificates are called and are: a tenant's chain may not pass for them. */
export interface CairnIdentity {
  /** O= of Cairn's certificates (SIGNER_ORG, and the O of every certificate the signer has issued). */
  organizations: readonly string[];
  /** Every certificate of Cairn's hierarchy (roots, intermediates, signing, OCSP responder and TSA certificates). */
  certificatesPem: readonly string[];
}

/**
 * CN= of Cairn's own certificates (domain/pki/ca.ts): `Cairn Root CA`, `Cairn Intermediate CA`, `Cairn Signing <n>`,
 * `Cairn OCSP Responder <n>`, `Cairn Time-Stamping Authority <n>`, each compared after folding (case, spacing, punctuation, accents, invisible
 * characters and look-alike letters). Other names with the word "cairn" in them are the tenant's business.
 */
const CAIRN_COMMON_NAME = /^cairn (root ca|intermediate ca|signing|ocsp responder|time stamping authority)( |$)/;

// Cyrillic, Greek and other letters drawn like the Latin ones of "cairn", "signing", "root", "ca", "ocsp", …
const LOOK_ALIKE_FROM = 'асеіӏıјорѕхуԁһոɡαοιρντηѵԛɑ';
const LOOK_ALIKE_TO = 'aceiiijopsxydhngaoipvtnvqa';
const LOOK_ALIKES = new Map([...LOOK_ALIKE_FROM].map((c, i) => [c, LOOK_ALIKE_TO[i]!]));

/** A name as a reader would take it: what differs only in case, spacing, accents or look-alike letters folds alike. */
export function foldName(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\p{M}\p{Cf}]/gu, '')
    .toLowerCase()
    .replace(/./gu, (c) => LOOK_ALIKES.get(c) ?? c)
    .replace(/[\s\p{Z}\p{P}]+/gu, ' ')
    .trim();
}

/**
 * Why this chain would pass for Cairn's own signing identity, or undefined: a certificate in it whose subject
 * carries Cairn's organisation or one of its certificates' common names, or that is one of Cairn's certificates or
 * issued by one. Verifiers and pages show a BYOK manifest's signer by its certificate's O and CN, so such a chain
 * would have Cairn host pages saying "Signed by: Cairn — Cairn Signing 1" for a tenant's key.
 */
export function impersonatesCairn(chainPem: readonly string[], cairn: CairnIdentity): string | undefined {
  const organizations = new Set(cairn.organizations.map(foldName));
  const own = cairn.certificatesPem.map((pem) => new X509Certificate(pem));
  for (const [i, pem] of chainPem.entries()) {
    const which = i === 0 ? 'the leaf certificate' : `certificate ${i + 1}`;
    const subject = new x509.X509Certificate(pem).subjectName;
    const o = subject.getField('O').find((value) => organizations.has(foldName(value)));
    if (o !== undefined)
      return `${which} names Cairn's own signing organisation (O=${o}); a tenant's certificate must name the tenant`;
    const cn = subject.getField('CN').find((value) => CAIRN_COMMON_NAME.test(foldName(value)));
    if (cn !== undefined)
      return `${which} carries the common name of one of Cairn's own certificates (CN=${cn}); a tenant's certificate must name the tenant`;
    const cert = new X509Certificate(pem);
    if (own.some((c) => c.raw.equals(cert.raw) || issuedBy(cert, c)))
      return `${which} is Cairn's own or issued by Cairn's CA; register a certificate of your own key`;
  }
  return undefined;
}

function issuedBy(child: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return child.checkIssued(issuer) && child.verify(issuer.publicKey);
  } catch {
    return false;
  }
}
