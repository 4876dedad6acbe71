import { isRevocationReason } from '@cairn/ocsp';
import type { PkiSettings } from '../../config.js';
import { parseCertificatePem } from '../../domain/pki/ca.js';
import type { OcspCertStatus, OcspIssuer, OcspResponderDeps } from '../../domain/pki/ocsp-response.js';
import type { CertificateRecords, KeyVault } from '../ports.js';

const ISSUERS_CACHE_MS = 5 * 60_000;

/**
 * What the OCSP responder answers from: the intermediates (active and retired) with their keys and delegated
 * responders, kept for a few minutes (invalidated by this process's own changes), and the status of what they
 * issued, read per request.
 */
export class OcspAnswers {
  #issuers: { list: readonly OcspIssuer[]; loadedAt: number } | undefined;

  constructor(
    private readonly store: CertificateRecords,
    private readonly keys: KeyVault,
    private readonly settings: PkiSettings,
    private readonly clock: () => Date,
  ) {}

  /** Drops the cached issuers (after a change to the hierarchy). */
  invalidate(): void {
    this.#issuers = undefined;
  }

  /** What createOcspHandler needs. */
  responderDeps(options: { onError?: (error: unknown) => void } = {}): OcspResponderDeps {
    return {
      issuers: () => this.issuers(),
      lookup: (issuerSerialHex: string, serialHex: string) => this.status(issuerSerialHex, serialHex),
      basePath: new URL(this.settings.ocspPublicUrl).pathname,
      validitySeconds: this.settings.ocspResponseValiditySeconds,
      clock: this.clock,
      ...(options.onError ? { onError: options.onError } : {}),
    };
  }

  private async status(issuerSerialHex: string, serialHex: string): Promise<OcspCertStatus> {
    const row = await this.store.statusOf(issuerSerialHex, serialHex);
    if (!row) return { status: 'unknown' };
    if (row.status === 'revoked' && row.revokedAt) {
      return {
        status: 'revoked',
        revokedAt: row.revokedAt,
        ...(row.reason && isRevocationReason(row.reason) ? { reason: row.reason } : {}),
      };
    }
    return { status: 'good' };
  }

  private async issuers(): Promise<readonly OcspIssuer[]> {
    const cached = this.#issuers;
    if (cached && Date.now() - cached.loadedAt < ISSUERS_CACHE_MS) return cached.list;
    const { intermediates, responders } = await this.store.ocspIssuerRows();
    const list: OcspIssuer[] = [];
    for (const row of intermediates) {
      const responder = responders.find((r) => r.issuerSerial === row.serialHex);
      list.push({
        serialHex: row.serialHex,
        certificateDer: Buffer.from(parseCertificatePem(row.pem).rawData),
        privateKey: await this.keys.caKey(row),
        ...(responder
          ? {
              responder: {
                certificateDer: Buffer.from(parseCertificatePem(responder.pem).rawData),
                privateKey: await this.keys.caKey(responder),
              },
            }
          : {}),
      });
    }
    // An empty list is not cached: another replica may be creating the hierarchy right now.
    if (list.length > 0) this.#issuers = { list, loadedAt: Date.now() };
    return list;
  }
}
