import type { CertificateRow, KeyBackend, KeyVault, PreparedSigningKey } from '../app/ports.js';
import type { PkiSettings } from '../config.js';
import {
  exportPkcs8,
  exportSpki,
  generateP256KeyPair,
  importSigningKey,
  newSerialHex,
  type CryptoKey,
} from '../domain/pki/ca.js';
import { openPrivateKey, sealPrivateKey } from '../domain/pki/envelope.js';
import { unavailable } from '../domain/pki/unavailable.js';
import { Pkcs11KeyBackend, SoftwareKeyBackend, destroyPkcs11Key, generatePkcs11SigningKey } from './key-backends.js';

/**
 * Private keys of the CA: made (in memory, sealed under the KEK, or on the HSM token), sealed for storage and
 * opened again for signing. Never touches the database; the certificate store keeps what this returns.
 */
export class KeyMaterial implements KeyVault {
  constructor(private readonly settings: PkiSettings) {}

  /** A software private key sealed under the KEK, bound to the certificate's serial. */
  async seal(serialHex: string, privateKey: CryptoKey): Promise<string> {
    const pkcs8 = await exportPkcs8(privateKey);
    try {
      return sealPrivateKey(this.settings.kek, serialHex, pkcs8);
    } finally {
      pkcs8.fill(0);
    }
  }

  /** Generates the next signing key: in memory (then sealed) or on the HSM token. */
  async prepareSigningKey(): Promise<PreparedSigningKey> {
    const serialHex = newSerialHex();
    if (this.settings.keyBackend === 'pkcs11') {
      const config = this.settings.pkcs11;
      if (!config) throw new Error('SIGNER_KEY_BACKEND=pkcs11 without PKCS#11 settings');
      const label = `${this.settings.pkcs11KeyLabelPrefix}-${serialHex}`;
      const spki = await generatePkcs11SigningKey(config, label, Buffer.from(serialHex, 'hex'));
      return {
        serialHex,
        spki,
        columns: { keyBackend: 'pkcs11', encryptedPrivateKey: null, pkcs11Label: label },
        discard: async () => {
          await destroyPkcs11Key(config, label);
        },
      };
    }
    const keys = await generateP256KeyPair();
    const pkcs8 = await exportPkcs8(keys.privateKey);
    try {
      return {
        serialHex,
        spki: await exportSpki(keys.publicKey),
        columns: {
          keyBackend: 'software',
          encryptedPrivateKey: sealPrivateKey(this.settings.kek, serialHex, pkcs8),
          pkcs11Label: null,
        },
        discard: async () => undefined,
      };
    } finally {
      pkcs8.fill(0);
    }
  }

  /** The sealed software key of a CA or responder certificate, imported for signing. */
  async caKey(row: CertificateRow): Promise<CryptoKey> {
    if (!row.encryptedPrivateKey) throw new Error(`certificate ${row.serialHex} has no private key here`);
    const opened = openPrivateKey(this.settings.kek, row.serialHex, row.encryptedPrivateKey);
    if (!opened.ok) throw new Error(`cannot unseal the key of ${row.serialHex}: ${opened.reason}`);
    try {
      return await importSigningKey(opened.plaintext);
    } finally {
      opened.plaintext.fill(0);
    }
  }

  /** The backend that signs with a signing certificate's key (software or PKCS#11). */
  backendFor(row: CertificateRow): KeyBackend {
    if (row.keyBackend === 'pkcs11') {
      if (!this.settings.pkcs11 || !row.pkcs11Label)
        throw unavailable(`certificate ${row.serialHex} needs the PKCS#11 backend, which is not configured`);
      return new Pkcs11KeyBackend(this.settings.pkcs11, row.pkcs11Label);
    }
    if (!row.encryptedPrivateKey) throw unavailable(`certificate ${row.serialHex} has no sealed key`);
    const opened = openPrivateKey(this.settings.kek, row.serialHex, row.encryptedPrivateKey);
    if (!opened.ok) throw unavailable(`cannot unseal the key of ${row.serialHex}: ${opened.reason}`);
    try {
      return SoftwareKeyBackend.fromPkcs8(opened.plaintext);
    } finally {
      opened.plaintext.fill(0);
    }
  }
}
