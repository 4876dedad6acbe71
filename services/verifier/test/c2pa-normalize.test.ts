// Pure parts of the C2PA reading: code classification, error classification, Reader-JSON normalisation,
// settings, and the bounded binary parsers. No child processes here.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { readingFromError, readingFromStore } from '../src/domain/c2pa/normalize.js';
import { judgeCodes } from '../src/domain/c2pa/status-codes.js';
import { readerSettingsJson, trustBundle, TrustListError } from '../src/adapters/c2pa/settings.js';
import { CborError, decodeCbor } from '../src/domain/c2pa/cbor.js';
import { bufferAccess, extractManifestStore } from '../src/domain/c2pa/asset-store.js';
import { claimsOf } from '../src/domain/c2pa/claims.js';
import type { ValidationEntry } from '../src/domain/c2pa/types.js';
import { VALID_AND_TRUSTED } from './support/readings.js';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';

const ANCHORS = readFileSync(`${SHARED_DIR}/fixtures/c2pa-rs/test-trust-anchors.pem`, 'utf8');

const active = (kind: ValidationEntry['kind'], ...codes: string[]): ValidationEntry[] =>
  codes.map((code) => ({ code, kind, scope: 'active' }));

describe('judgeCodes', () => {
  const clean = active('success', 'claimSignature.validated', 'assertion.dataHash.match', 'signingCredential.trusted');

  it('a clean, trusted manifest', () => {
    expect(judgeCodes(clean, 'Trusted')).toEqual({ ...VALID_AND_TRUSTED, timestamped: false, timestampTrusted: false });
  });

  it.each([
    ['claimSignature.mismatch', 'signatureValid'],
    ['claimSignature.missing', 'signatureValid'],
    ['signingCredential.invalid', 'signatureValid'],
    ['algorithm.unsupported', 'signatureValid'],
    ['assertion.hashedURI.mismatch', 'assertionsValid'],
    ['claim.malformed', 'assertionsValid'],
    ['claim.hardBindings.missing', 'assertionsValid'],
    ['assertion.action.malformed', 'assertionsValid'],
    ['assertion.dataHash.mismatch', 'hardBindingValid'],
    ['assertion.bmffHash.mismatch', 'hardBindingValid'],
    ['assertion.boxesHash.mismatch', 'hardBindingValid'],
    ['assertion.collectionHash.mismatch', 'hardBindingValid'],
  ] as const)('failure %s clears %s only', (code, field) => {
    const verdict = judgeCodes([...clean, ...active('failure', code)], 'Invalid');
    expect(verdict[field]).toBe(false);
    for (const other of ['signatureValid', 'assertionsValid', 'hardBindingValid'] as const) {
      if (other !== field) expect(verdict[other]).toBe(true);
    }
  });

  it('untrusted wins over the trusted state; the trusted code or state alone is enough otherwise', () => {
    expect(judgeCodes([...clean, ...active('failure', 'signingCredential.untrusted')], 'Valid').trusted).toBe(false);
    expect(judgeCodes(active('success', 'claimSignature.validated'), 'Trusted').trusted).toBe(true);
    expect(judgeCodes(active('success', 'claimSignature.validated'), 'Valid').trusted).toBe(false);
  });

  it('expiry: signingCredential.expired or claimSignature.outsideValidity', () => {
    expect(judgeCodes(active('failure', 'signingCredential.expired'), 'Invalid').certificateExpired).toBe(true);
    expect(judgeCodes(active('failure', 'claimSignature.outsideValidity'), 'Invalid').certificateExpired).toBe(true);
  });

  it('OCSP outcomes', () => {
    expect(judgeCodes(active('failure', 'signingCredential.ocsp.revoked'), 'Invalid')).toMatchObject({
      revoked: true,
      ocspStatus: 'revoked',
    });
    expect(judgeCodes(active('success', 'signingCredential.ocsp.notRevoked'), 'Valid')).toMatchObject({
      revoked: false,
      ocspStatus: 'good',
    });
    expect(judgeCodes(active('failure', 'signingCredential.ocsp.unknown'), 'Invalid').ocspStatus).toBe('unknown');
    expect(judgeCodes(active('informational', 'signingCredential.ocsp.inaccessible'), 'Valid').ocspStatus).toBe(
      'unavailable',
    );
    expect(judgeCodes(active('informational', 'signingCredential.ocsp.skipped'), 'Valid').ocspStatus).toBe(
      'unavailable',
    );
  });

  it('time-stamps: validated, trusted, or spoiled by a mismatch', () => {
    expect(judgeCodes(active('success', 'timeStamp.validated', 'timeStamp.trusted'), 'Valid')).toMatchObject({
      timestamped: true,
      timestampTrusted: true,
    });
    expect(judgeCodes(active('success', 'timeStamp.validated'), 'Valid')).toMatchObject({
      timestamped: true,
      timestampTrusted: false,
    });
    expect(
      judgeCodes(
        [...active('success', 'timeStamp.validated'), ...active('informational', 'timeStamp.mismatch')],
        'Invalid',
      ).timestamped,
    ).toBe(false);
  });

  it("an ingredient's failures do not fail the active manifest", () => {
    const entries: ValidationEntry[] = [
      ...clean,
      { code: 'claimSignature.mismatch', kind: 'failure', scope: 'ingredient' },
    ];
    expect(judgeCodes(entries, 'Trusted').signatureValid).toBe(true);
  });
});

describe('readingFromError (c2pa-node rejections)', () => {
  it('remote manifest references', () => {
    const url = 'https://cai-manifests.adobe.com/manifests/adobe-urn-uuid-5f37e182';
    expect(
      readingFromError(
        `C2pa(RemoteManifestUrl("${url}"))`,
        `must fetch remote manifests from url ${url}`,
        'image/jpeg',
      ),
    ).toEqual({
      type: 'reading',
      reading: { kind: 'remote', url, fetched: false },
    });
    expect(
      readingFromError(
        `C2pa(RemoteManifestFetch("remote URI \\"${url}\\" is not permitted by the allowed list"))`,
        'could not fetch the remote manifest',
        'image/jpeg',
      ),
    ).toEqual({ type: 'reading', reading: { kind: 'remote', url, fetched: false } });
  });

  it('unsupported, absent, malformed, and settings problems', () => {
    expect(readingFromError('C2pa(UnsupportedType)', 'type is unsupported', 'audio/ogg')).toEqual({
      type: 'reading',
      reading: { kind: 'unsupported', mimeType: 'audio/ogg' },
    });
    expect(readingFromError('C2pa(JumbfNotFound)', 'no JUMBF data found', 'image/jpeg')).toEqual({
      type: 'reading',
      reading: { kind: 'none' },
    });
    expect(
      readingFromError(
        'C2pa(InvalidAsset("Boxes are too deply nested, unsupported asset"))',
        'asset could not be parsed: Boxes are too deply nested',
        'video/mp4',
      ),
    ).toEqual({
      type: 'reading',
      reading: { kind: 'malformed', detail: 'InvalidAsset: asset could not be parsed: Boxes are too deply nested' },
    });
    expect(readingFromError('Error', 'Signing failed: Reader: Invalid settings: bad anchors', 'image/jpeg').type).toBe(
      'settings',
    );
  });
});

describe('readingFromStore', () => {
  it('a store without an active manifest is malformed', () => {
    expect(
      readingFromStore({
        storeJson: { manifests: {}, validation_status: [{ code: 'claim.missing' }] },
        manifestStore: null,
      }),
    ).toEqual({
      kind: 'malformed',
      detail: 'no active manifest: claim.missing',
    });
    expect(readingFromStore({ storeJson: 'not an object', manifestStore: null }).kind).toBe('malformed');
  });

  it('falls back to signature_info for the signer when no chain can be extracted', () => {
    const reading = readingFromStore({
      storeJson: {
        active_manifest: 'urn:c2pa:x',
        manifests: {
          'urn:c2pa:x': {
            claim_generator_info: [{ name: 'cairn', version: '1.0.0' }],
            assertions: [],
            signature_info: {
              issuer: 'ACME',
              common_name: 'ACME Signer',
              cert_serial_number: '255',
              time: '2026-01-01T00:00:00+00:00',
            },
          },
        },
        validation_results: {
          activeManifest: { success: [{ code: 'claimSignature.validated' }], informational: [], failure: [] },
        },
        validation_state: 'Valid',
      },
      manifestStore: null,
    });
    expect(reading).toMatchObject({
      kind: 'manifest',
      signer: { commonName: 'ACME Signer', organization: 'ACME', serialHex: 'ff', certChainPem: [] },
      signedAt: '2026-01-01T00:00:00+00:00',
      claims: { claimGenerator: 'cairn/1.0.0', aiGenerated: false, aiAssisted: false },
      manifestStore: null,
    });
  });
});

describe('claimsOf', () => {
  const manifest = (actions: unknown[]) => ({
    label: 'm',
    assertions: [{ label: 'c2pa.actions.v2', data: { actions } }],
    signatureInfo: {},
  });

  it('AI-generated vs AI-assisted', () => {
    expect(
      claimsOf(
        manifest([
          {
            action: 'c2pa.created',
            digitalSourceType: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia',
          },
        ]),
      ),
    ).toMatchObject({
      aiGenerated: true,
      aiAssisted: false,
    });
    expect(
      claimsOf(
        manifest([
          {
            action: 'c2pa.created',
            digitalSourceType: 'http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture',
          },
          {
            action: 'c2pa.edited',
            digitalSourceType: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia',
          },
        ]),
      ),
    ).toMatchObject({ aiGenerated: false, aiAssisted: true });
    expect(
      claimsOf(
        manifest([
          {
            action: 'c2pa.created',
            digitalSourceType: 'https://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia',
          },
        ]),
      ),
    ).toMatchObject({
      aiGenerated: false,
      aiAssisted: true,
    });
    expect(
      claimsOf(
        manifest([
          {
            action: 'c2pa.created',
            digitalSourceType: 'http://cv.iptc.org/newscodes/digitalsourcetype/algorithmicMedia',
          },
        ]),
      ),
    ).toMatchObject({
      aiGenerated: false,
      aiAssisted: false,
    });
  });

  it('a v1 string softwareAgent is the generator when there is no Cairn assertion', () => {
    expect(claimsOf(manifest([{ action: 'c2pa.created', softwareAgent: 'Some Tool 1.0' }])).generator).toBe(
      'Some Tool 1.0',
    );
  });
});

describe('settings', () => {
  it('carries the trust list and locks out the network', () => {
    const settings = JSON.parse(readerSettingsJson([ANCHORS])) as Record<string, Record<string, unknown>>;
    expect(settings.verify).toMatchObject({ verify_trust: true, remote_manifest_fetch: false, ocsp_fetch: false });
    expect(settings.core).toEqual({ allowed_network_hosts: [] });
    expect((settings.trust?.trust_anchors as string).match(/BEGIN CERTIFICATE/g)).toHaveLength(3);
    expect((JSON.parse(readerSettingsJson([])) as { trust?: unknown }).trust).toEqual({});
  });

  it('is made once per list: a repeat of a list answers its settings, another list its own, a bad one fails again', () => {
    const first = readerSettingsJson([ANCHORS]);
    expect(readerSettingsJson([ANCHORS])).toBe(first);
    const one = ANCHORS.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/)![0];
    const narrowed = JSON.parse(readerSettingsJson([one])) as { trust: { trust_anchors: string } };
    expect(narrowed.trust.trust_anchors).toBe(one);
    expect(readerSettingsJson([ANCHORS])).toBe(first);
    expect(() => readerSettingsJson([ANCHORS, 'hello'])).toThrow(TrustListError);
    expect(() => readerSettingsJson([ANCHORS, 'hello'])).toThrow(TrustListError);
  });

  it('rejects a list entry that is not a certificate', () => {
    expect(() => trustBundle(['hello'])).toThrow(TrustListError);
    expect(() => trustBundle(['-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'])).toThrow(TrustListError);
  });
});

describe('bounded parsers', () => {
  it('CBOR: maps, tags, byte strings; refuses truncation and runaway nesting', () => {
    const value = decodeCbor(Uint8Array.from([0xd2, 0x82, 0xa1, 0x18, 0x21, 0x42, 0x01, 0x02, 0xf6]));
    expect(value).toEqual({ tag: 18, value: [new Map([[33, Uint8Array.from([1, 2])]]), null] });
    expect(() => decodeCbor(Uint8Array.from([0x5a, 0xff, 0xff, 0xff, 0xff]))).toThrow(CborError);
    expect(() => decodeCbor(new Uint8Array(100).fill(0x81))).toThrow(/nested too deeply/);
  });

  it('container walk: garbage and truncated containers give null, never throw', () => {
    for (const bytes of [
      Buffer.alloc(0),
      Buffer.from('hello world, not a container'),
      Buffer.from([0xff, 0xd8, 0xff, 0xeb, 0x00]), // JPEG cut inside a segment header
      Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xeb, 0x01, 0x00]), Buffer.from('JP', 'latin1'), Buffer.alloc(6)]), // APP11 cut inside its JUMBF header
      Buffer.concat([
        Buffer.from([0xff, 0xd8, 0xff, 0xeb, 0x00, 0x30]),
        Buffer.from('JP', 'latin1'),
        Buffer.from([0, 1, 0, 0, 0, 1]),
        Buffer.from([0, 0, 0x10, 0]),
        Buffer.from('jumb', 'latin1'),
        Buffer.alloc(8),
      ]), // a store's superbox claiming 4 KiB, then the end
      Buffer.concat([
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
        Buffer.from([0, 0, 0, 200]),
        Buffer.from('caBX'),
      ]),
      Buffer.concat([
        Buffer.from('RIFF\0\0\0\0WAVE', 'latin1'),
        Buffer.from('C2PA', 'latin1'),
        Buffer.from([0xff, 0xff, 0xff, 0x7f]),
      ]),
      Buffer.concat([Buffer.from([0, 0, 0, 1]), Buffer.from('ftyp', 'latin1'), Buffer.alloc(8, 0xff)]),
    ]) {
      // The answer, not merely no exception: a truncated container yields no store (not a partial one).
      expect([bytes.toString('hex'), extractManifestStore(bufferAccess(bytes))]).toEqual([bytes.toString('hex'), null]);
    }
  });
});
