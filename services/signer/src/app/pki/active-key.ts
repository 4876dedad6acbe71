import { CairnError } from '@cairn/errors';
import type { PkiSettings } from '../../config.js';
import { unavailable } from '../../domain/pki/unavailable.js';
import type { ActiveSigningKey, CertificateRecords, CertificateRow, KeyVault, PkiLogger } from '../ports.js';

/**
 * The key new signatures use, with its chain, cached in this process. Re-read from the database at most every
 * SIGNER_ACTIVE_KEY_RECHECK_MS, so a rotation or revocation made by another replica is picked up; this
 * process's own changes drop it at once (invalidate).
 */
export class ActiveKeyCache {
  #active: { key: ActiveSigningKey; checkedAt: number } | undefined;
  #loading: Promise<ActiveSigningKey> | undefined;

  constructor(
    private readonly store: CertificateRecords,
    private readonly keys: KeyVault,
    private readonly settings: PkiSettings,
    private readonly logger: PkiLogger | undefined,
  ) {}

  invalidate(): void {
    this.#active = undefined;
  }

  /**
   * A caller holding the returned object keeps using that key to the end of its signature.
   * Throws CairnError('cairn.signer.unavailable') when there is no usable active key.
   */
  async get(): Promise<ActiveSigningKey> {
    const cached = this.#active;
    if (cached && Date.now() - cached.checkedAt < this.settings.activeKeyRecheckMs) return cached.key;
    this.#loading ??= this.refresh()
      .catch((error: unknown) => {
        // Whatever went wrong, the caller can only answer 503: never let an internal error become a 500.
        throw error instanceof CairnError ? error : unavailable('loading the active signing key failed', error);
      })
      .finally(() => {
        this.#loading = undefined;
      });
    return this.#loading;
  }

  private async refresh(): Promise<ActiveSigningKey> {
    let row: CertificateRow | undefined;
    try {
      row = await this.store.activeSigning();
    } catch (error) {
      // Without the database we cannot see a rotation, but the key we hold is still ours to use.
      if (this.#active) {
        this.logger?.warn({ err: error }, 'could not re-read the active signing key; keeping the cached one');
        return this.#active.key;
      }
      throw unavailable('reading the active signing certificate failed', error);
    }
    if (!row) {
      this.#active = undefined;
      throw unavailable('no active signing certificate');
    }
    if (this.#active?.key.serialHex === row.serialHex) {
      this.#active.checkedAt = Date.now();
      return this.#active.key;
    }
    const key = await this.load(row);
    this.#active = { key, checkedAt: Date.now() };
    this.logger?.info({ serial: row.serialHex, backend: row.keyBackend }, 'active signing key loaded');
    return key;
  }

  private async load(row: CertificateRow): Promise<ActiveSigningKey> {
    let intermediate: CertificateRow | undefined;
    try {
      intermediate = row.issuerSerial ? await this.store.bySerial(row.issuerSerial) : undefined;
    } catch (error) {
      throw unavailable('reading the intermediate certificate failed', error);
    }
    if (!intermediate) throw unavailable(`issuer of ${row.serialHex} not found`);
    return {
      serialHex: row.serialHex,
      certificatePem: row.pem,
      chainPem: [row.pem, intermediate.pem],
      notAfter: row.notAfter,
      backend: this.keys.backendFor(row),
    };
  }
}
