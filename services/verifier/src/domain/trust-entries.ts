import { X509Certificate } from 'node:crypto';
import { CairnError } from '@cairn/errors';

export interface TrustEntry {
  issuer_cn: string;
  certificate_pem: string;
}

const MAX_ENTRIES = 100;

/** Parses and checks a custom trust list: each entry one PEM certificate, not expired, CN as named. */
export function validateTrustEntries(entries: TrustEntry[]): TrustEntry[] {
  if (entries.length === 0 || entries.length > MAX_ENTRIES)
    throw new CairnError('cairn.validation.invalid_body', `entries must hold 1 to ${MAX_ENTRIES} certificates.`);
  return entries.map((entry, index) => {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(entry.certificate_pem);
    } catch {
      throw new CairnError(
        'cairn.validation.invalid_body',
        `entries.${index}.certificate_pem is not a PEM certificate.`,
        { errors: [{ path: `entries.${index}.certificate_pem`, message: 'not a PEM certificate' }] },
      );
    }
    if (new Date(cert.validTo).getTime() < Date.now()) {
      throw new CairnError(
        'cairn.validation.invalid_body',
        `entries.${index}: the certificate expired on ${cert.validTo}.`,
        { errors: [{ path: `entries.${index}.certificate_pem`, message: 'expired' }] },
      );
    }
    return { issuer_cn: entry.issuer_cn, certificate_pem: cert.toString() };
  });
}
