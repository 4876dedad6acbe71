import { randomBytes } from 'node:crypto';
import type { RevocationReason } from '@cairn/ocsp';
import type { PkiSettings } from '../../config.js';
import { CERTIFICATE_ROLES, type CertificateRole } from '../../db/pki-schema.js';
import type { OcspResponderDeps } from '../../domain/pki/ocsp-response.js';
import type { TsaResponderDeps } from '../../domain/pki/time-stamp-answer.js';
import { unavailable } from '../../domain/pki/unavailable.js';
import type { ActiveSigningKey, CertificateRecords, EnqueueEvent, KeyVault, PkiLogger } from '../ports.js';
import { ActiveKeyCache } from './active-key.js';
import { Issuance, type PkiOverview } from './issuance.js';
import { OcspAnswers } from './ocsp-answers.js';
import { revokeCertificate, type RevocationDeps, type RevokeResult } from './revocation.js';
import { notifyExpiring, rotateIfDue, type RotationDeps, type RotationResult } from './rotation.js';
import { TsaCredentials } from './tsa-credential.js';
import { info, type CertificateInfo } from './types.js';

export type { CertificateInfo } from './types.js';
export type { PkiOverview } from './issuance.js';
export type { RevokeResult } from './revocation.js';
export type { RotationResult } from './rotation.js';

export interface CertificateAuthorityDeps {
  /** `signer.certificates` (store/certificates.ts). */
  readonly store: CertificateRecords;
  /** Sealed software keys and the PKCS#11 token (adapters/key-material.ts). */
  readonly keys: KeyVault;
  readonly settings: PkiSettings;
  /** Injectable for tests of rotation and expiry; defaults to the wall clock. */
  readonly clock?: () => Date;
  readonly logger?: PkiLogger;
}

/**
 * The signer's certificate authority and signing keys, over `signer.certificates`: the use case the rest of the
 * signer uses. Each responsibility is its own module behind it (services/signer/README.md): issuance
 * (issuance.ts), revocation (revocation.ts), rotation and expiry notices (rotation.ts), the cached active key
 * (active-key.ts), what the OCSP responder answers from (ocsp-answers.ts) and the TSA's credential
 * (tsa-credential.ts), over two ports: the certificate records (store/certificates.ts) and the key vault
 * (adapters/key-material.ts).
 *
 * Every change (creation, rotation, revocation) runs in one transaction holding a transaction-scoped
 * advisory lock, re-reading state after taking it, so concurrent replicas serialise and the second one
 * finds the work done. A partial unique index (one active certificate per role) backs this up.
 */
export class CertificateAuthority {
  readonly #settings: PkiSettings;
  readonly #clock: () => Date;
  readonly #logger: PkiLogger | undefined;
  readonly #store: CertificateRecords;
  readonly #issuance: Issuance;
  readonly #activeKey: ActiveKeyCache;
  readonly #ocsp: OcspAnswers;
  readonly #tsa: TsaCredentials;
  /** Where this process's own signs are stamped: unguessable, so the public path's limit never applies to them. */
  readonly #ownTsaPath = `/tsa-own/${randomBytes(16).toString('hex')}`;
  readonly #revocation: RevocationDeps;
  readonly #rotation: RotationDeps;

  constructor(deps: CertificateAuthorityDeps) {
    this.#settings = deps.settings;
    this.#clock = deps.clock ?? (() => new Date());
    this.#logger = deps.logger;
    this.#store = deps.store;
    const keys = deps.keys;
    this.#issuance = new Issuance(this.#store, keys, deps.settings);
    this.#activeKey = new ActiveKeyCache(this.#store, keys, deps.settings, deps.logger);
    this.#ocsp = new OcspAnswers(this.#store, keys, deps.settings, this.#clock);
    this.#tsa = new TsaCredentials(this.#store, keys);
    const changed = () => this.#invalidate();
    this.#revocation = {
      store: this.#store,
      keys,
      issuance: this.#issuance,
      clock: this.#clock,
      logger: deps.logger,
      changed,
    };
    this.#rotation = {
      store: this.#store,
      keys,
      issuance: this.#issuance,
      settings: deps.settings,
      logger: deps.logger,
      changed,
      responderChanged: () => this.#ocsp.invalidate(),
      tsaChanged: () => this.#tsa.invalidate(),
    };
  }

  /**
   * Creates what is missing of root → intermediate → active signing certificate (+ the intermediate's OCSP
   * responder certificate). Idempotent, and safe when several replicas call it at once.
   */
  async ensureDevelopmentPki(org: string = this.#settings.org): Promise<PkiOverview> {
    const overview = await this.#issuance.ensureHierarchy(org, this.#clock, this.#logger);
    if (overview.created.length > 0) this.#invalidate();
    return overview;
  }

  /**
   * The key new signatures use, with its chain (cached; see ActiveKeyCache). Throws
   * CairnError('cairn.signer.unavailable') when there is no usable active key.
   */
  async activeSigningKey(): Promise<ActiveSigningKey> {
    return this.#activeKey.get();
  }

  /** Revokes a signing certificate, replacing it when it was the active one (revocation.ts). */
  async revoke(
    target: string /* a serial in hex, or 'current' */,
    reason: RevocationReason,
    enqueue?: EnqueueEvent,
  ): Promise<RevokeResult> {
    return revokeCertificate(this.#revocation, target, reason, enqueue);
  }

  /** Rotates the signing certificate and renews the OCSP responder's and the TSA's when due (rotation.ts). */
  async rotateIfDue(now: Date = this.#clock()): Promise<RotationResult> {
    return rotateIfDue(this.#rotation, now);
  }

  /** Announces signing certificates close to their end, once each (rotation.ts). */
  async notifyExpiring(now: Date, enqueue: EnqueueEvent): Promise<number> {
    return notifyExpiring(this.#rotation, now, enqueue);
  }

  /** PEM of the active root: the trust anchor verifiers must be configured with. */
  async trustAnchorPem(): Promise<string> {
    const { root } = await this.#store.activeRows();
    if (!root) throw unavailable('no root certificate');
    return root.pem;
  }

  async listCertificates(roles: readonly CertificateRole[] = CERTIFICATE_ROLES): Promise<CertificateInfo[]> {
    return (await this.#store.list(roles)).map(info);
  }

  async certificate(serialHex: string): Promise<CertificateInfo | undefined> {
    const row = await this.#store.bySerial(serialHex.toLowerCase());
    return row ? info(row) : undefined;
  }

  /**
   * What createOcspHandler needs: the intermediates (active and retired) with their keys and delegated
   * responders, and the status of what they issued.
   */
  ocspResponderDeps(options: { onError?: (error: unknown) => void } = {}): OcspResponderDeps {
    return this.#ocsp.responderDeps(options);
  }

  /** What createTsaHandler needs: the active TSA credential, mounted at TSA_PUBLIC_URL's path. */
  tsaResponderDeps(options: { onError?: (error: unknown) => void } = {}): TsaResponderDeps {
    return {
      credential: () => this.#tsa.get(),
      basePath: new URL(this.#settings.tsaPublicUrl).pathname,
      ownPath: this.#ownTsaPath,
      publicRequestsPerSecond: this.#settings.tsaPublicRequestsPerSecond,
      clock: this.#clock,
      ...(options.onError ? { onError: options.onError } : {}),
    };
  }

  #invalidate(): void {
    this.#activeKey.invalidate();
    this.#ocsp.invalidate();
    this.#tsa.invalidate();
  }
}
