import { parseCertificatePem } from '../../domain/pki/ca.js';
import type { TsaCredential } from '../../domain/pki/time-stamp-token.js';
import { unavailable } from '../../domain/pki/unavailable.js';
import type { CertificateRecords, KeyVault } from '../ports.js';

const CREDENTIAL_CACHE_MS = 5 * 60_000;

/**
 * The TSA's active credential (certificate, its issuing intermediate, unsealed key), kept for a few minutes and
 * invalidated by this process's own renewals. A credential another replica retired meanwhile stays usable:
 * retiring is not revoking, and its certificate outlives its renewal by 30 days.
 */
export class TsaCredentials {
  #cached: { credential: TsaCredential; loadedAt: number } | undefined;

  constructor(
    private readonly store: CertificateRecords,
    private readonly keys: KeyVault,
  ) {}

  invalidate(): void {
    this.#cached = undefined;
  }

  async get(): Promise<TsaCredential> {
    const cached = this.#cached;
    if (cached && Date.now() - cached.loadedAt < CREDENTIAL_CACHE_MS) return cached.credential;
    const { tsa } = await this.store.activeRows();
    if (!tsa?.issuerSerial) throw unavailable('no time-stamping authority certificate');
    const issuer = await this.store.bySerial(tsa.issuerSerial);
    if (!issuer) throw unavailable(`the issuer of TSA certificate ${tsa.serialHex} is missing`);
    const credential: TsaCredential = {
      certificateDer: Buffer.from(parseCertificatePem(tsa.pem).rawData),
      issuerCertificateDer: Buffer.from(parseCertificatePem(issuer.pem).rawData),
      privateKey: await this.keys.caKey(tsa),
    };
    this.#cached = { credential, loadedAt: Date.now() };
    return credential;
  }
}
