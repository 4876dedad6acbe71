import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { sql } from 'drizzle-orm';
import { CairnError } from '@cairn/errors';
import type { AnyEvent } from '@cairn/events';
import type { Tx } from '@cairn/db';
import type { CertificateAuthority } from '../src/app/pki/certificate-authority.js';
import { c2paTrustSettings, signWithC2pa } from '../src/adapters/c2pa/callback-signer.js';
import { openPrivateKey } from '../src/domain/pki/envelope.js';
import { closePkcs11 } from '../src/adapters/key-backends.js';
import type { ActiveSigningKey, KeyBackend } from '../src/app/ports.js';
import { pkiSettingsFromConfig } from '../src/config.js';
import { x509 } from '../src/domain/pki/x509.js';
import { EKU_C2PA_CLAIM_SIGNING, EKU_EMAIL_PROTECTION, EKU_OCSP_SIGNING } from '../src/domain/pki/ca.js';
import { startPkiMaintenance } from '../src/app/pki/maintenance.js';
import { createLogger } from '@cairn/logging';
import graphene from 'graphene-pk11';
import { certificateAuthority, createPkiDb, testSettings, type PkiDb } from './fixtures/pki-db.js';
import { newBuilder, readValidation, releaseC2paHandles, signJpeg } from './fixtures/c2pa.js';
import { SOFTHSM_MODULE, USER_PIN, setupSoftHsm, type SoftHsm } from './fixtures/softhsm.js';

let pki: PkiDb;
let hsm: SoftHsm;
let hsmToken: string;

beforeAll(async () => {
  hsm = setupSoftHsm();
  hsmToken = hsm.initToken('pki');
  pki = await createPkiDb();
});
afterAll(async () => {
  closePkcs11();
  hsm.cleanup();
  await pki.dispose();
  await releaseC2paHandles();
});
beforeEach(async () => {
  await pki.reset();
});

type Row = {
  serial_hex: string;
  role: string;
  status: string;
  key_backend: string;
  encrypted_private_key: string | null;
  pkcs11_label: string | null;
  pem: string;
};

async function rows(): Promise<Row[]> {
  const result = await pki.db.execute<Row>(sql`select * from signer.certificates order by created_at`);
  return result.rows;
}

function newCa(overrides: Parameters<typeof testSettings>[0] = {}, clock?: () => Date): CertificateAuthority {
  return certificateAuthority(pki.db, testSettings(overrides), clock);
}

async function signedWith(active: ActiveSigningKey): Promise<Buffer> {
  return signJpeg((source, dest) => signWithC2pa(newBuilder(), active, source, dest));
}

describe('development PKI creation', () => {
  it('creates root → intermediate → signing certificate with the profiles c2pa expects, once', async () => {
    const ca = newCa({ org: 'Acme Media', ocspPublicUrl: 'http://127.0.0.1:9471/ocsp' });
    const first = await ca.ensureDevelopmentPki('Acme Media');
    expect(first.created).toEqual(['root', 'intermediate', 'signing', 'ocsp_responder', 'tsa']);
    const again = await ca.ensureDevelopmentPki('Acme Media');
    expect(again.created).toEqual([]);
    expect(again.signing.serialHex).toBe(first.signing.serialHex);
    expect(await rows()).toHaveLength(5);

    const root = new x509.X509Certificate(first.root.pem);
    const intermediate = new x509.X509Certificate(first.intermediate.pem);
    const leaf = new x509.X509Certificate(first.signing.pem);

    expect(await root.isSelfSigned()).toBe(true);
    expect(root.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(true);
    const rootYears = (root.notAfter.getTime() - root.notBefore.getTime()) / (365 * 86_400_000);
    expect(Math.round(rootYears)).toBe(10);

    const ib = intermediate.getExtension(x509.BasicConstraintsExtension);
    expect(ib?.ca).toBe(true);
    expect(ib?.pathLength).toBe(0);
    expect(await intermediate.verify({ publicKey: root.publicKey, signatureOnly: true })).toBe(true);
    expect(Math.round((intermediate.notAfter.getTime() - intermediate.notBefore.getTime()) / (365 * 86_400_000))).toBe(
      5,
    );

    expect(leaf.subject).toBe('O=Acme Media, CN=Cairn Signing 1');
    expect(leaf.issuer).toBe(intermediate.subject);
    expect(await leaf.verify({ publicKey: intermediate.publicKey, signatureOnly: true })).toBe(true);
    expect(leaf.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(false);
    const ku = leaf.getExtension(x509.KeyUsagesExtension);
    expect(ku?.critical).toBe(true);
    expect(ku?.usages).toBe(x509.KeyUsageFlags.digitalSignature);
    expect(leaf.getExtension(x509.ExtendedKeyUsageExtension)?.usages).toEqual([
      EKU_C2PA_CLAIM_SIGNING,
      EKU_EMAIL_PROTECTION,
    ]);
    expect(leaf.getExtension(x509.SubjectKeyIdentifierExtension)).not.toBeNull();
    expect(leaf.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId).toBe(
      intermediate.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
    );
    expect(leaf.getExtension(x509.AuthorityInfoAccessExtension)?.ocsp.map((n) => n.value)).toEqual([
      'http://127.0.0.1:9471/ocsp',
    ]);
    expect(leaf.publicKey.algorithm).toMatchObject({ name: 'ECDSA', namedCurve: 'P-256' });

    // The intermediate's delegated OCSP responder: end-entity, OCSPSigning only, ocsp-nocheck, short-lived.
    const responder = new x509.X509Certificate(first.ocspResponder.pem);
    expect(responder.issuer).toBe(intermediate.subject);
    expect(responder.subject).toBe('O=Acme Media, CN=Cairn OCSP Responder 1');
    expect(await responder.verify({ publicKey: intermediate.publicKey, signatureOnly: true })).toBe(true);
    expect(responder.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(false);
    expect(responder.getExtension(x509.ExtendedKeyUsageExtension)?.usages).toEqual([EKU_OCSP_SIGNING]);
    expect(responder.getExtension('1.3.6.1.5.5.7.48.1.5')).not.toBeNull();
    expect(Math.round((responder.notAfter.getTime() - responder.notBefore.getTime()) / 86_400_000)).toBe(90);

    // The time-stamping authority (RFC 3161 §2.3): end-entity, id-kp-timeStamping as its only and critical EKU.
    const tsa = new x509.X509Certificate(first.tsa.pem);
    expect(tsa.issuer).toBe(intermediate.subject);
    expect(tsa.subject).toBe('O=Acme Media, CN=Cairn Time-Stamping Authority 1');
    expect(await tsa.verify({ publicKey: intermediate.publicKey, signatureOnly: true })).toBe(true);
    expect(tsa.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(false);
    const tsaEku = tsa.getExtension(x509.ExtendedKeyUsageExtension);
    expect([tsaEku?.usages, tsaEku?.critical]).toEqual([['1.3.6.1.5.5.7.3.8'], true]);
    expect(tsa.getExtension(x509.KeyUsagesExtension)?.usages).toBe(x509.KeyUsageFlags.digitalSignature);
    expect(Math.round((tsa.notAfter.getTime() - tsa.notBefore.getTime()) / 86_400_000)).toBe(90);
  });

  it('is race-safe: replicas calling at once create exactly one hierarchy', async () => {
    const replicas = Array.from({ length: 5 }, () => newCa());
    const results = await Promise.all(replicas.map((ca) => ca.ensureDevelopmentPki()));
    const all = await rows();
    expect(all.filter((r) => r.role === 'root')).toHaveLength(1);
    expect(all.filter((r) => r.role === 'intermediate')).toHaveLength(1);
    expect(all.filter((r) => r.role === 'signing')).toHaveLength(1);
    expect(all.filter((r) => r.role === 'ocsp_responder')).toHaveLength(1);
    expect(all.filter((r) => r.role === 'tsa')).toHaveLength(1);
    expect(new Set(results.map((r) => r.signing.serialHex)).size).toBe(1);
    expect(results.filter((r) => r.created.length > 0)).toHaveLength(1);
  });

  it('completes a partial hierarchy (a root without the rest)', async () => {
    await newCa().ensureDevelopmentPki();
    await pki.db.execute(sql`delete from signer.certificates where role <> 'root'`);
    const overview = await newCa().ensureDevelopmentPki();
    expect(overview.created).toEqual(['intermediate', 'signing', 'ocsp_responder', 'tsa']);
  });
});

describe('keys at rest', () => {
  it('stores only sealed keys, which open with the right KEK alone', async () => {
    const ca = newCa();
    await ca.ensureDevelopmentPki();
    const stored = await rows();
    const dump =
      (
        await pki.db.execute<{ t: string }>(
          sql`select string_agg(row_to_json(c)::text, '') as t from signer.certificates c`,
        )
      ).rows[0]?.t ?? '';
    for (const row of stored) {
      expect(row.key_backend).toBe('software');
      expect(row.pem).not.toMatch(/PRIVATE KEY/);
      const sealed = row.encrypted_private_key as string;
      const opened = openPrivateKey(testSettings().kek, row.serial_hex, sealed);
      expect(opened.ok).toBe(true);
      if (!opened.ok) continue;
      // The PKCS#8 appears nowhere in the table, in any encoding.
      for (const encoding of ['base64', 'base64url', 'hex'] as const)
        expect(dump).not.toContain(opened.plaintext.toString(encoding));
      expect(Buffer.from(sealed).includes(opened.plaintext)).toBe(false);
      expect(openPrivateKey(Buffer.alloc(32, 7), row.serial_hex, sealed).ok).toBe(false);
    }
  });

  it('cannot sign under another KEK (503, not 500)', async () => {
    await newCa().ensureDevelopmentPki();
    const wrong = newCa({ kek: Buffer.alloc(32, 9) });
    await expect(wrong.activeSigningKey()).rejects.toMatchObject({ code: 'cairn.signer.unavailable', status: 503 });
  });

  it('reports the KEK requirement of production', () => {
    const base = {
      CAIRN_ENV: 'production' as const,
      SIGNER_ORG: 'Cairn',
      SIGNER_KEY_BACKEND: 'software' as const,
      SIGNER_PKCS11_MODULE: SOFTHSM_MODULE,
      SIGNER_PKCS11_KEY_LABEL: 'cairn-signing',
      SIGNER_CERT_VALIDITY_DAYS: 365,
      SIGNER_ROTATE_BEFORE_DAYS: 30,
      SIGNER_EXPIRY_NOTICE_DAYS: 30,
      SIGNER_ACTIVE_KEY_RECHECK_MS: 1000,
      OCSP_PUBLIC_URL: 'http://127.0.0.1:9471/ocsp',
      OCSP_PORT: 9471,
      OCSP_RESPONSE_VALIDITY_SECONDS: 3600,
      TSA_PUBLIC_REQUESTS_PER_SECOND: 20,
    };
    expect(() => pkiSettingsFromConfig(base)).toThrow(/SIGNER_KEK is required/);
    expect(pkiSettingsFromConfig({ ...base, CAIRN_ENV: 'development' }).kek).toHaveLength(32);
    expect(() => pkiSettingsFromConfig({ ...base, CAIRN_ENV: 'development', SIGNER_KEY_BACKEND: 'pkcs11' })).toThrow(
      /SIGNER_PKCS11_TOKEN/,
    );
    expect(() => pkiSettingsFromConfig({ ...base, CAIRN_ENV: 'development', SIGNER_CERT_VALIDITY_DAYS: 20 })).toThrow(
      /ROTATE_BEFORE/,
    );
  });
});

describe('the active signing key', () => {
  it('signs manifests c2pa reports Trusted under trustAnchorPem(), and is cached', async () => {
    const ca = newCa({ activeKeyRecheckMs: 60_000 });
    const overview = await ca.ensureDevelopmentPki();
    const active = await ca.activeSigningKey();
    expect(active.serialHex).toBe(overview.signing.serialHex);
    expect(active.chainPem).toEqual([overview.signing.pem, overview.intermediate.pem]);
    expect(await ca.activeSigningKey()).toBe(active);
    expect(JSON.stringify(active)).not.toMatch(/PRIVATE|"d"/);

    const report = await readValidation(await signedWith(active), c2paTrustSettings(await ca.trustAnchorPem()));
    expect(report.state).toBe('Trusted');
    expect(report.failureCodes).toEqual([]);
    expect(report.signerSerialHex).toBe(active.serialHex);
  });

  it('is unavailable (503) before any PKI exists', async () => {
    await expect(newCa().activeSigningKey()).rejects.toBeInstanceOf(CairnError);
    await expect(newCa().activeSigningKey()).rejects.toMatchObject({ code: 'cairn.signer.unavailable' });
  });

  it('lives on the HSM token with SIGNER_KEY_BACKEND=pkcs11: no key in the database, Trusted signatures', async () => {
    const ca = newCa({
      keyBackend: 'pkcs11',
      pkcs11: { modulePath: SOFTHSM_MODULE, tokenLabel: hsmToken, pin: USER_PIN },
      pkcs11KeyLabelPrefix: 'cairn-test',
    });
    const overview = await ca.ensureDevelopmentPki();
    const leafRow = (await rows()).find((r) => r.role === 'signing');
    expect(leafRow).toMatchObject({
      key_backend: 'pkcs11',
      encrypted_private_key: null,
      pkcs11_label: `cairn-test-${overview.signing.serialHex}`,
    });
    // CA keys stay software keys sealed under the KEK.
    expect(
      (await rows())
        .filter((r) => r.role !== 'signing')
        .every((r) => r.key_backend === 'software' && r.encrypted_private_key),
    ).toBe(true);

    const active = await ca.activeSigningKey();
    expect(active.backend.kind).toBe('pkcs11');
    const report = await readValidation(await signedWith(active), c2paTrustSettings(await ca.trustAnchorPem()));
    expect(report.state).toBe('Trusted');
    expect(report.failureCodes).toEqual([]);
  });
});

describe('rotation', () => {
  it('activates a new certificate atomically; a signature that started with the old key completes and stays Trusted', async () => {
    // Issued with 20 days of validity, then seen by a replica that rotates 30 days before expiry.
    await newCa({ leafValidityDays: 20, rotateBeforeDays: 10 }).ensureDevelopmentPki();
    const ca = newCa({ leafValidityDays: 365, rotateBeforeDays: 30 });
    const old = await ca.activeSigningKey();

    // A signature in flight: c2pa-rs has called the backend, which is still working.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const slow: KeyBackend = {
      kind: old.backend.kind,
      sign: async (tbs) => {
        entered();
        await gate;
        return old.backend.sign(tbs);
      },
    };
    const inflight = signedWith({ ...old, backend: slow });
    await inside;

    const rotation = await ca.rotateIfDue();
    expect(rotation.rotated).toBe(true);
    if (!rotation.rotated) return;
    expect(rotation.previous?.serialHex).toBe(old.serialHex);
    expect(rotation.previous?.status).toBe('retired');
    expect(rotation.current.status).toBe('active');

    release();
    const anchors = c2paTrustSettings(await ca.trustAnchorPem());
    const oldReport = await readValidation(await inflight, anchors);
    expect(oldReport.state).toBe('Trusted');
    expect(oldReport.signerSerialHex).toBe(old.serialHex);

    const next = await ca.activeSigningKey();
    expect(next.serialHex).toBe(rotation.current.serialHex);
    const newReport = await readValidation(await signedWith(next), anchors);
    expect(newReport.state).toBe('Trusted');
    expect(newReport.signerSerialHex).toBe(next.serialHex);
    expect(next.certificatePem).toContain('BEGIN CERTIFICATE');
    expect(new x509.X509Certificate(next.certificatePem).subject).toBe('O=Cairn Test, CN=Cairn Signing 2');

    // Due no longer; and exactly one active signing certificate.
    expect(await ca.rotateIfDue()).toMatchObject({ rotated: false, reason: 'not_due' });
    const signing = (await rows()).filter((r) => r.role === 'signing');
    expect(signing.map((r) => r.status).sort()).toEqual(['active', 'retired']);
  });

  it('rotates once when replicas race', async () => {
    await newCa({ leafValidityDays: 20, rotateBeforeDays: 10 }).ensureDevelopmentPki();
    const results = await Promise.all(Array.from({ length: 4 }, () => newCa().rotateIfDue()));
    expect(results.filter((r) => r.rotated)).toHaveLength(1);
    expect((await rows()).filter((r) => r.role === 'signing' && r.status === 'active')).toHaveLength(1);
  });

  it('does nothing when the active certificate has time left', async () => {
    await newCa().ensureDevelopmentPki();
    const result = await newCa().rotateIfDue();
    expect(result).toMatchObject({ rotated: false, reason: 'not_due' });
    expect(result.ocspResponderRenewed).toBeUndefined();
  });

  it('renews the OCSP responder certificate when it has under 30 days left, once', async () => {
    const ca = newCa();
    const { ocspResponder } = await ca.ensureDevelopmentPki();
    const later = new Date(Date.now() + 70 * 86_400_000);
    const results = await Promise.all([ca.rotateIfDue(later), newCa().rotateIfDue(later)]);
    const renewed = results.map((r) => r.ocspResponderRenewed).filter((r) => r !== undefined);
    expect(renewed).toHaveLength(1);
    expect(renewed[0]?.subject).toBe('O=Cairn Test, CN=Cairn OCSP Responder 2');
    const responders = (await rows()).filter((r) => r.role === 'ocsp_responder');
    expect(responders.map((r) => [r.serial_hex === ocspResponder.serialHex, r.status])).toEqual([
      [true, 'retired'],
      [false, 'active'],
    ]);
  });

  it('refuses to rotate when the intermediate would cap the new certificate at the same end date', async () => {
    const ca = newCa();
    await ca.ensureDevelopmentPki();
    // Four years and eleven months on: the intermediate (5 years) is the limit.
    const late = new Date(Date.now() + (5 * 365 - 20) * 86_400_000);
    const once = await ca.rotateIfDue(late);
    // The first rotation still extends the leaf up to the intermediate's end; the next cannot.
    expect(once.rotated).toBe(true);
    expect(await ca.rotateIfDue(late)).toMatchObject({ rotated: false, reason: 'would_not_extend' });
  });
});

describe('revocation', () => {
  it('revokes the active certificate and activates a replacement so signing continues', async () => {
    const ca = newCa();
    const { signing, root } = await ca.ensureDevelopmentPki();
    const before = await ca.activeSigningKey();
    const result = await ca.revoke('current', 'keyCompromise');
    expect(result).toMatchObject({
      ok: true,
      alreadyRevoked: false,
      revoked: { serialHex: signing.serialHex, status: 'revoked', revocationReason: 'keyCompromise' },
    });
    if (!result.ok) return;
    expect(result.replacement?.status).toBe('active');
    const after = await ca.activeSigningKey();
    expect(after.serialHex).toBe(result.replacement?.serialHex);
    expect(after.serialHex).not.toBe(before.serialHex);
    const report = await readValidation(await signedWith(after), c2paTrustSettings(root.pem));
    expect(report.state).toBe('Trusted');

    expect(await ca.revoke(signing.serialHex, 'keyCompromise')).toMatchObject({ ok: true, alreadyRevoked: true });
  });

  it('revokes a retired certificate without touching the active one', async () => {
    await newCa({ leafValidityDays: 20, rotateBeforeDays: 10 }).ensureDevelopmentPki();
    const ca = newCa();
    const rotation = await ca.rotateIfDue();
    if (!rotation.rotated || !rotation.previous) throw new Error('expected a rotation');
    const result = await ca.revoke(rotation.previous.serialHex.toUpperCase(), 'superseded');
    expect(result).toMatchObject({ ok: true, alreadyRevoked: false });
    if (result.ok) expect(result.replacement).toBeUndefined();
    expect((await ca.activeSigningKey()).serialHex).toBe(rotation.current.serialHex);
  });

  it('answers errors as values for what it cannot revoke', async () => {
    const ca = newCa();
    expect(await ca.revoke('current', 'keyCompromise')).toEqual({ ok: false, error: 'no_active_certificate' });
    const { root } = await ca.ensureDevelopmentPki();
    expect(await ca.revoke('abcdef', 'keyCompromise')).toEqual({ ok: false, error: 'not_found' });
    expect(await ca.revoke(root.serialHex, 'keyCompromise')).toEqual({ ok: false, error: 'not_a_signing_certificate' });
    expect(await ca.revoke('current', 'removeFromCRL')).toEqual({ ok: false, error: 'invalid_reason' });
  });
});

describe('PKCS#11 keys that end up unused', () => {
  function tokenKeyLabels(prefix: string): string[] {
    const module = graphene.Module.load(SOFTHSM_MODULE, 'inspect');
    module.initialize();
    const slots = module.getSlots(true);
    for (let i = 0; i < slots.length; i++) {
      const slot = slots.items(i);
      if (slot.getToken().label !== hsmToken) continue;
      const session = slot.open(graphene.SessionFlag.SERIAL_SESSION);
      try {
        session.login(USER_PIN);
      } catch {
        // already logged in through the CA's session
      }
      const found = session.find({ class: graphene.ObjectClass.PRIVATE_KEY });
      const labels: string[] = [];
      for (let j = 0; j < found.length; j++) labels.push(found.items(j).toType<graphene.PrivateKey>().label);
      session.close();
      return labels.filter((l) => l.startsWith(prefix));
    }
    return [];
  }

  it('are removed from the token when a replica loses the rotation race', async () => {
    const pkcs11 = { modulePath: SOFTHSM_MODULE, tokenLabel: hsmToken, pin: USER_PIN };
    const prefix = `race-${Date.now().toString(36)}`;
    const settings = { keyBackend: 'pkcs11' as const, pkcs11, pkcs11KeyLabelPrefix: prefix };
    await newCa({ ...settings, leafValidityDays: 20, rotateBeforeDays: 10 }).ensureDevelopmentPki();
    expect(tokenKeyLabels(prefix)).toHaveLength(1);
    const results = await Promise.all(Array.from({ length: 3 }, () => newCa(settings).rotateIfDue()));
    expect(results.filter((r) => r.rotated)).toHaveLength(1);
    // The first certificate's key and the winner's: the losers' keys were destroyed.
    const labels = tokenKeyLabels(prefix);
    const signing = (await rows()).filter((r) => r.role === 'signing').map((r) => r.pkcs11_label);
    expect(labels.sort()).toEqual([...signing].sort());
  });
});

describe('maintenance loop', () => {
  it('rotates a due certificate and announces what is expiring, once, with the service logger', async () => {
    await newCa({ leafValidityDays: 20, rotateBeforeDays: 10 }).ensureDevelopmentPki();
    const ca = newCa({ leafValidityDays: 365, rotateBeforeDays: 30, expiryNoticeDays: 30 });
    const events: AnyEvent[] = [];
    let flushed = 0;
    const maintenance = startPkiMaintenance(ca, {
      enqueue: async (_tx, event) => {
        events.push(event);
      },
      afterEnqueue: () => flushed++,
      logger: createLogger({ service: 'signer', level: 'silent' }),
      intervalMs: 3_600_000,
    });
    await maintenance.runOnce();
    await maintenance.runOnce();
    await maintenance.stop();
    const signing = (await rows()).filter((r) => r.role === 'signing');
    expect(signing.map((r) => r.status).sort()).toEqual(['active', 'retired']);
    // Rotation ran first: the new certificate has a year left, the retired one is not announced.
    expect(events).toHaveLength(0);
    expect(flushed).toBe(0);

    const soon = newCa({ expiryNoticeDays: 400 });
    const m2 = startPkiMaintenance(soon, {
      enqueue: async (_tx, event) => void events.push(event),
      afterEnqueue: () => flushed++,
    });
    await m2.runOnce();
    await m2.runOnce();
    await m2.stop();
    expect(events.map((e) => e.type)).toEqual(['certificate.expiring']);
    expect(flushed).toBe(1);
  });
});

describe('certificate.expiring', () => {
  // Stands in for Outbox.enqueue: the event row is written in the caller's transaction.
  const enqueueToOutbox = async (tx: Tx, event: AnyEvent) => {
    await tx.execute(
      sql`insert into signer.outbox (event_id, subject, envelope) values (${event.event_id}, ${`cairn.${event.type}`}, ${JSON.stringify(event)}::jsonb)`,
    );
  };

  async function outbox(): Promise<AnyEvent[]> {
    return (
      await pki.db.execute<{ envelope: AnyEvent }>(sql`select envelope from signer.outbox order by seq`)
    ).rows.map((r) => r.envelope);
  }

  it('is enqueued exactly once for a certificate 20 days from expiry', async () => {
    const now = new Date();
    const ca = newCa({ leafValidityDays: 20, rotateBeforeDays: 10 }, () => now);
    const { signing } = await ca.ensureDevelopmentPki();

    const counts = await Promise.all([
      ca.notifyExpiring(now, enqueueToOutbox),
      newCa().notifyExpiring(now, enqueueToOutbox),
    ]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(1);
    expect(await ca.notifyExpiring(new Date(now.getTime() + 86_400_000), enqueueToOutbox)).toBe(0);

    const events = await outbox();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'certificate.expiring',
      tenant_id: 'system',
      data: {
        serial_hex: signing.serialHex,
        role: 'signing',
        not_after: signing.notAfter.toISOString(),
        days_left: 19,
      },
    });
    expect(events[0]?.event_id).toMatch(/^evt_/);
  });

  it('does not announce a certificate with more than 30 days left, and retries after a failed enqueue', async () => {
    const now = new Date();
    const ca = newCa({ leafValidityDays: 60 }, () => now);
    await ca.ensureDevelopmentPki();
    expect(await ca.notifyExpiring(now, enqueueToOutbox)).toBe(0);

    const later = new Date(now.getTime() + 35 * 86_400_000);
    await expect(
      ca.notifyExpiring(later, async () => {
        throw new Error('outbox down');
      }),
    ).rejects.toThrow('outbox down');
    // Nothing was marked: the next run announces it.
    expect(await ca.notifyExpiring(later, enqueueToOutbox)).toBe(1);
    expect(await outbox()).toHaveLength(1);
  });
});
