import { describe, expect, it } from '@jest/globals';
import { generateKeyPairSync, sign, webcrypto, X509Certificate } from 'node:crypto';
import {
  checkCredentialChain,
  foldName,
  impersonatesCairn,
  registrationProofMessage,
} from '../src/domain/credential-chain.js';
import { es256Raw, verifiesEs256 } from '../src/domain/es256.js';
import { x509 } from '../src/domain/pki/x509.js';
import { makeTestCredential } from './c2pa-fixtures.js';

// docs/decisions/0027-byok-proves-possession.md: what a tenant's chain may not pass for, and the ES256 checks every
// BYOK signature goes through.

const P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

/** A CA and a leaf under it, named as given (JSON names: any characters, no DN-string parsing). */
async function chain(caName: x509.JsonName, leafName: x509.JsonName): Promise<{ ca: string; leaf: string }> {
  const caKeys = await webcrypto.subtle.generateKey(P256, true, ['sign', 'verify']);
  const leafKeys = await webcrypto.subtle.generateKey(P256, true, ['sign', 'verify']);
  const now = Date.now();
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: caName,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + DAY_MS),
    keys: caKeys,
    signingAlgorithm: P256,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
  });
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
    subject: leafName,
    issuer: ca.subject,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + DAY_MS),
    publicKey: leafKeys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: P256,
    extensions: [new x509.BasicConstraintsExtension(false, undefined, true)],
  });
  return { ca: `${ca.toString('pem')}\n`, leaf: `${leaf.toString('pem')}\n` };
}

const named = (o: string, cn: string): x509.JsonName => [{ O: [o] }, { CN: [cn] }];

describe('impersonatesCairn', () => {
  const cairn = { organizations: ['Cairn'], certificatesPem: [] as string[] };

  it('refuses the names Cairn’s own certificates carry, in the leaf or the CA, however they are spelled', async () => {
    const tenantCa = named('Acme Newsroom', 'Acme Root');
    const impostors: Array<[x509.JsonName, x509.JsonName]> = [
      [tenantCa, named('Cairn', 'Cairn Signing 1')],
      [tenantCa, named('Acme Newsroom', 'Cairn Signing 12')],
      [tenantCa, named(' cairn ', 'Desk')],
      [tenantCa, named('C\u0430irn', 'Desk')], // Cyrillic а
      [tenantCa, named('Cai\u200brn', 'Desk')], // zero-width space
      [tenantCa, named('Cáirn', 'Desk')],
      [tenantCa, named('Acme Newsroom', 'CAIRN OCSP-Responder 2')],
      [tenantCa, named('Acme Newsroom', 'Cairn Time Stamping Authority 4')],
      [named('Cairn', 'Cairn Root CA'), named('Acme Newsroom', 'Desk')],
      [named('Acme Newsroom', 'Cairn Intermediate CA'), named('Acme Newsroom', 'Desk')],
      // Several organisations in one name: any one of them counts.
      [tenantCa, [{ O: ['Acme Newsroom', 'Cairn'] }, { CN: ['Desk'] }]],
    ];
    for (const [caName, leafName] of impostors) {
      const { ca, leaf } = await chain(caName, leafName);
      expect([JSON.stringify(leafName), impersonatesCairn([leaf, ca], cairn)]).toEqual([
        JSON.stringify(leafName),
        expect.stringMatching(/Cairn/),
      ]);
    }
  });

  it('follows the organisation Cairn is configured with, and leaves other names with “cairn” alone', async () => {
    const { ca, leaf } = await chain(named('Acme Newsroom', 'Acme Root'), named('Northwind Signing', 'Desk'));
    expect(impersonatesCairn([leaf, ca], { organizations: ['Northwind Signing'], certificatesPem: [] })).toMatch(
      /O=Northwind Signing/,
    );
    for (const [o, cn] of [
      ['Cairn Valley Gazette', 'Cairnhill Photo Desk'],
      ['Cairn Test Org', 'Cairn Test Signer'],
      ['Cairns Post', 'Signing Desk'],
      ['Acme', 'Cairn Signingham'],
    ] as const) {
      const other = await chain(named('Acme Newsroom', 'Acme Root'), named(o, cn));
      expect([o, cn, impersonatesCairn([other.leaf, other.ca], cairn)]).toEqual([o, cn, undefined]);
    }
  });

  it('refuses a chain that is Cairn’s own or that Cairn’s CA issued, whatever it is called', async () => {
    const { ca, leaf } = await chain(named('Plain Org', 'Plain Root'), named('Plain Org', 'Plain Leaf'));
    const asCairn = { organizations: ['Cairn'], certificatesPem: [ca] };
    expect(impersonatesCairn([leaf], asCairn)).toMatch(/issued by Cairn's CA/);
    expect(impersonatesCairn([leaf, ca], asCairn)).toMatch(/issued by Cairn's CA/);
    expect(impersonatesCairn([leaf, ca], cairn)).toBeUndefined();
  });
});

describe('proof of possession and signature checks', () => {
  it('binds the proof to the tenant and the leaf; raw and DER signatures verify under the leaf only', async () => {
    const credential = await makeTestCredential();
    const checked = checkCredentialChain(credential.certChainPem);
    if (typeof checked === 'string') throw new Error(checked);
    const message = registrationProofMessage('t_A', checked.leaf);
    expect(message).toMatch(/^cairn-byok-registration\nt_A\n[0-9a-f]{64}$/);
    expect(registrationProofMessage('t_B', checked.leaf)).not.toBe(message);
    const data = Buffer.from(message, 'utf8');
    for (const dsaEncoding of ['ieee-p1363', 'der'] as const) {
      const raw = es256Raw(sign('sha256', data, { key: credential.privateKeyPem, dsaEncoding }));
      expect(raw).toHaveLength(64);
      expect(verifiesEs256(checked.leaf.publicKey, data, raw!)).toBe(true);
      expect(
        verifiesEs256(checked.leaf.publicKey, Buffer.from(registrationProofMessage('t_B', checked.leaf)), raw!),
      ).toBe(false);
    }
    const stranger = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
    const forged = sign('sha256', data, { key: stranger, dsaEncoding: 'ieee-p1363' });
    expect(verifiesEs256(checked.leaf.publicKey, data, forged)).toBe(false);
    expect(es256Raw(Buffer.from('not a signature'))).toBeUndefined();
    expect(new X509Certificate(credential.leafCertPem).raw.equals(checked.leaf.raw)).toBe(true);
  });

  it('folds what a reader cannot tell apart', () => {
    expect(foldName('  C\u0430IRN\u200b  Signing\t1 ')).toBe('cairn signing 1');
    expect(foldName('Cairn-Root_CA')).toBe('cairn root ca');
  });
});
