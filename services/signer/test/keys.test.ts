import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPublicKey, generateKeyPairSync, randomBytes, verify } from 'node:crypto';
import { inspect } from 'node:util';
import graphene from 'graphene-pk11';
import { CairnError } from '@cairn/errors';
import { SOFTHSM_MODULE, USER_PIN, setupSoftHsm, type SoftHsm } from './fixtures/softhsm.js';
import { createTestHierarchy, type TestHierarchy } from './fixtures/hierarchy.js';
import { newBuilder, readValidation, releaseC2paHandles, smallJpeg } from './fixtures/c2pa.js';
import {
  Pkcs11KeyBackend,
  SoftwareKeyBackend,
  closePkcs11,
  generatePkcs11SigningKey,
} from '../src/adapters/key-backends.js';
import type { ActiveSigningKey, KeyBackend } from '../src/app/ports.js';
import type { Pkcs11Config } from '../src/config.js';
import { openPrivateKey, sealPrivateKey } from '../src/domain/pki/envelope.js';
import {
  c2paSignerFailure,
  c2paTrustSettings,
  createC2paSigner,
  signWithC2pa,
} from '../src/adapters/c2pa/callback-signer.js';

let hsm: SoftHsm;
let token: string;
let wrongPinToken: string;
let vanishingToken: string;
let pkcs11: Pkcs11Config;
let hierarchy: TestHierarchy;

beforeAll(async () => {
  hsm = setupSoftHsm();
  // All tokens exist before the module is first initialised: SoftHSM does not see tokens another process
  // creates afterwards (the same holds in production: provision the token, then start the signer).
  token = hsm.initToken('keys');
  wrongPinToken = hsm.initToken('wrongpin');
  vanishingToken = hsm.initToken('gone');
  pkcs11 = { modulePath: SOFTHSM_MODULE, tokenLabel: token, pin: USER_PIN };
  hierarchy = await createTestHierarchy();
});

afterAll(async () => {
  closePkcs11();
  hsm.cleanup();
  await releaseC2paHandles();
});

function softwareKey(): { backend: SoftwareKeyBackend; pkcs8: Buffer; spki: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pkcs8 = privateKey.export({ format: 'der', type: 'pkcs8' });
  return {
    backend: SoftwareKeyBackend.fromPkcs8(pkcs8),
    pkcs8,
    spki: publicKey.export({ format: 'der', type: 'spki' }),
  };
}

function verifiesP1363(spki: Buffer, data: Buffer, signature: Buffer): boolean {
  return verify(
    'sha256',
    data,
    { key: createPublicKey({ key: spki, format: 'der', type: 'spki' }), dsaEncoding: 'ieee-p1363' },
    signature,
  );
}

/** Asserts a 503 CairnError, and (for PKCS#11) that it failed at `stage`, so a test cannot pass for the wrong reason. */
async function expectUnavailable(promise: Promise<unknown>, stage?: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CairnError);
  expect((error as CairnError).code).toBe('cairn.signer.unavailable');
  expect((error as CairnError).status).toBe(503);
  // The client-facing detail names no internals.
  expect((error as CairnError).message).not.toMatch(/pkcs11|token|pin|CKR_/i);
  if (stage) expect(String(((error as CairnError).cause as Error | undefined)?.message)).toContain(stage);
}

describe('private keys at rest', () => {
  const kek = randomBytes(32);
  const serial = '0a1b2c3d4e5f';

  it('seals so that the stored text does not contain the PKCS#8 and opens only with the right KEK and serial', () => {
    const { pkcs8 } = softwareKey();
    const sealed = sealPrivateKey(kek, serial, pkcs8);
    expect(sealed.startsWith('v1.')).toBe(true);
    expect(Buffer.from(sealed, 'utf8').includes(pkcs8)).toBe(false);
    expect(sealed.includes(pkcs8.toString('base64'))).toBe(false);
    expect(sealed.includes(pkcs8.toString('base64url'))).toBe(false);
    expect(sealed.includes(pkcs8.toString('hex'))).toBe(false);

    const opened = openPrivateKey(kek, serial, sealed);
    expect(opened.ok && opened.plaintext.equals(pkcs8)).toBe(true);
    expect(openPrivateKey(randomBytes(32), serial, sealed)).toEqual({ ok: false, reason: 'kek_mismatch' });
    // Moved onto another certificate's row, it does not open (AAD binds the serial).
    expect(openPrivateKey(kek, 'ffff', sealed)).toEqual({ ok: false, reason: 'authentication_failed' });
    const parts = sealed.split('.');
    const last = Buffer.from(parts[5] ?? '', 'base64url');
    last[0] = (last[0] ?? 0) ^ 1;
    parts[5] = last.toString('base64url');
    expect(openPrivateKey(kek, serial, parts.join('.'))).toEqual({ ok: false, reason: 'authentication_failed' });
    expect(openPrivateKey(kek, serial, 'nonsense')).toEqual({ ok: false, reason: 'malformed' });
  });

  it('seals the same key differently each time (fresh data key and IVs)', () => {
    const { pkcs8 } = softwareKey();
    expect(sealPrivateKey(kek, serial, pkcs8)).not.toBe(sealPrivateKey(kek, serial, pkcs8));
  });
});

describe('SoftwareKeyBackend', () => {
  it('signs ES256 as raw r||s (64 bytes) that verifies as IEEE P1363', async () => {
    const { backend, spki } = softwareKey();
    const data = Buffer.from('to be signed');
    const signature = await backend.sign(data);
    expect(signature).toHaveLength(64);
    expect(verifiesP1363(spki, data, signature)).toBe(true);
    expect(backend.publicKeySpki().equals(spki)).toBe(true);
  });

  it('shows no key material when serialised or inspected', () => {
    const { backend, pkcs8 } = softwareKey();
    expect(JSON.stringify(backend)).toBe('{"kind":"software"}');
    expect(inspect(backend, { showHidden: true, depth: 5 })).not.toContain(pkcs8.toString('base64'));
    expect(inspect(backend)).toBe('SoftwareKeyBackend { kind: "software" }');
  });

  it('refuses keys that are not P-256', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-384' });
    expect(() => SoftwareKeyBackend.fromPkcs8(privateKey.export({ format: 'der', type: 'pkcs8' }))).toThrow(/P-256/);
  });
});

describe('Pkcs11KeyBackend (SoftHSM2)', () => {
  it('generates the key on the token, non-extractable, and signs raw r||s that node:crypto verifies', async () => {
    const label = `sig-${randomBytes(4).toString('hex')}`;
    const spki = await generatePkcs11SigningKey(pkcs11, label, randomBytes(8));
    const backend = new Pkcs11KeyBackend(pkcs11, label);
    const data = Buffer.from('claim bytes');
    const signature = await backend.sign(data);
    expect(signature).toHaveLength(64);
    expect(verifiesP1363(spki, data, signature)).toBe(true);
    expect(JSON.stringify(backend)).toBe(JSON.stringify({ kind: 'pkcs11', keyLabel: label }));

    // Look at the key object on the token directly: it must never be readable.
    const module = graphene.Module.load(SOFTHSM_MODULE, 'inspect');
    module.initialize();
    const slots = module.getSlots(true);
    let slot: graphene.Slot | undefined;
    for (let i = 0; i < slots.length; i++) if (slots.items(i).getToken().label === token) slot = slots.items(i);
    const session = slot!.open(graphene.SessionFlag.SERIAL_SESSION);
    try {
      session.login(USER_PIN);
    } catch (error) {
      // The backend's session already logged this process in to the token.
      expect(String(error)).toContain('CKR_USER_ALREADY_LOGGED_IN');
    }
    const key = session.find({ class: graphene.ObjectClass.PRIVATE_KEY, label }).items(0).toType<graphene.PrivateKey>();
    expect(key.extractable).toBe(false);
    expect(key.sensitive).toBe(true);
    expect(() => key.getAttribute({ value: null })).toThrow(/CKR_ATTRIBUTE_SENSITIVE/);
    session.close();
  });

  it('refuses to generate over an existing label', async () => {
    const label = `dup-${randomBytes(4).toString('hex')}`;
    await generatePkcs11SigningKey(pkcs11, label, randomBytes(8));
    await expectUnavailable(generatePkcs11SigningKey(pkcs11, label, randomBytes(8)), 'pkcs11 generate key');
  });

  it('throws cairn.signer.unavailable when the PIN is wrong', async () => {
    await expectUnavailable(
      new Pkcs11KeyBackend({ modulePath: SOFTHSM_MODULE, tokenLabel: wrongPinToken, pin: '0000' }, 'any').sign(
        Buffer.from('x'),
      ),
      'pkcs11 login',
    );
  });

  it('throws cairn.signer.unavailable when the token does not exist', async () => {
    await expectUnavailable(
      new Pkcs11KeyBackend({ ...pkcs11, tokenLabel: 'no-such-token' }, 'any').sign(Buffer.from('x')),
      'pkcs11 token lookup',
    );
  });

  it('throws cairn.signer.unavailable when the module cannot be loaded', async () => {
    await expectUnavailable(
      new Pkcs11KeyBackend({ ...pkcs11, modulePath: '/nonexistent/libpkcs11.so' }, 'any').sign(Buffer.from('x')),
      'pkcs11 module load',
    );
    await expectUnavailable(
      generatePkcs11SigningKey({ ...pkcs11, modulePath: '/nonexistent/libpkcs11.so' }, 'any', randomBytes(4)),
      'pkcs11 module load',
    );
  });

  it('throws cairn.signer.unavailable when the key is not on the token', async () => {
    await expectUnavailable(
      new Pkcs11KeyBackend(pkcs11, 'no-such-key').sign(Buffer.from('x')),
      'key not found on token',
    );
  });

  it('throws cairn.signer.unavailable when the token disappears under an open session, and keeps doing so', async () => {
    const gone = vanishingToken;
    const config = { ...pkcs11, tokenLabel: gone };
    await generatePkcs11SigningKey(config, 'k', randomBytes(4));
    const backend = new Pkcs11KeyBackend(config, 'k');
    await expect(backend.sign(Buffer.from('before'))).resolves.toHaveLength(64);
    hsm.deleteToken(gone);
    await expectUnavailable(backend.sign(Buffer.from('after')), 'pkcs11 sign');
    await expectUnavailable(backend.sign(Buffer.from('again')), 'pkcs11');
  });
});

describe('c2pa-node accepts the signatures', () => {
  async function signAndRead(active: ActiveSigningKey) {
    const jpeg = await smallJpeg();
    const dest = { buffer: null as Buffer | null };
    // The exported signer, used exactly as the pipeline will.
    await newBuilder().signAsync(createC2paSigner(active), { buffer: jpeg, mimeType: 'image/jpeg' }, dest);
    expect(dest.buffer).not.toBeNull();
    const signed = dest.buffer as Buffer;
    return {
      trusted: await readValidation(signed, c2paTrustSettings(hierarchy.root.pem)),
      untrusted: await readValidation(signed),
    };
  }

  const backends: Array<[string, () => Promise<{ spki: Buffer; backend: KeyBackend }>]> = [
    ['software', async () => softwareKey()],
    [
      'pkcs11',
      async () => {
        const label = `c2pa-${randomBytes(4).toString('hex')}`;
        const spki = await generatePkcs11SigningKey(pkcs11, label, randomBytes(8));
        return { spki, backend: new Pkcs11KeyBackend(pkcs11, label) };
      },
    ],
  ];

  it.each(backends)(
    '%s: Trusted with our root as anchor, signingCredential.untrusted without it',
    async (_name, make) => {
      const { spki, backend } = await make();
      const { trusted, untrusted } = await signAndRead(await hierarchy.activeKey(spki, backend));
      expect(trusted.state).toBe('Trusted');
      expect(trusted.statusCodes).toEqual([]);
      expect(trusted.failureCodes).toEqual([]);
      expect(trusted.successCodes).toEqual(
        expect.arrayContaining([
          'signingCredential.trusted',
          'claimSignature.validated',
          'claimSignature.insideValidity',
        ]),
      );

      expect(untrusted.state).toBe('Valid');
      expect(untrusted.statusCodes).toEqual(['signingCredential.untrusted']);
      expect(untrusted.successCodes).toContain('claimSignature.validated');
    },
  );

  it('is not trusted under another root', async () => {
    const other = await createTestHierarchy('Someone Else');
    const { spki, backend } = softwareKey();
    const active = await hierarchy.activeKey(spki, backend);
    const dest = { buffer: null as Buffer | null };
    await signWithC2pa(newBuilder(), active, { buffer: await smallJpeg(), mimeType: 'image/jpeg' }, dest);
    const report = await readValidation(dest.buffer as Buffer, c2paTrustSettings(other.root.pem));
    expect(report.state).toBe('Valid');
    expect(report.statusCodes).toEqual(['signingCredential.untrusted']);
  });

  it('signWithC2pa surfaces the backend’s cairn.signer.unavailable instead of c2pa’s generic error', async () => {
    const { spki } = softwareKey();
    const failing: KeyBackend = {
      kind: 'pkcs11',
      sign: async () => {
        throw new CairnError('cairn.signer.unavailable', 'The signing key is temporarily unavailable; retry later.');
      },
    };
    const active = await hierarchy.activeKey(spki, failing);
    await expectUnavailable(
      signWithC2pa(newBuilder(), active, { buffer: await smallJpeg(), mimeType: 'image/jpeg' }, { buffer: null }),
    );

    // The same through createC2paSigner + c2paSignerFailure, for callers driving signAsync themselves.
    const signer = createC2paSigner(active);
    expect(c2paSignerFailure(signer)).toBeUndefined();
    const error = await newBuilder()
      .signAsync(signer, { buffer: await smallJpeg(), mimeType: 'image/jpeg' }, { buffer: null })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).not.toBeInstanceOf(CairnError);
    await expectUnavailable(Promise.reject(c2paSignerFailure(signer) ?? new Error('no failure was recorded')));
  });
});
