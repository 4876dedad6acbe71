import { describe, expect, it } from '@jest/globals';
import type { Evidence, ManifestEvidence } from '../src/domain/evidence.js';
import { decide, LOW_CONFIDENCE_CAP, STATUSES, type Status } from '../src/domain/verdict.js';

const PAYLOAD = '0123456789abcdef';

const validManifest = (overrides: Partial<Extract<ManifestEvidence, { kind: 'manifest' }>> = {}): ManifestEvidence => ({
  kind: 'manifest',
  signatureValid: true,
  trusted: true,
  hardBindingValid: true,
  certificateExpired: false,
  timestamped: false,
  signerName: 'Cairn Signing 1',
  signedAt: '2026-11-20T10:00:00Z',
  claims: { generator: 'ImageGen', model: 'v3', aiGenerated: true, aiAssisted: false, createdAt: '2026-11-20T09:59:00Z' },
  softBindingValue: PAYLOAD,
  validationCodes: [],
  ...overrides,
});

const base = (overrides: Partial<Evidence> = {}): Evidence => ({
  manifest: validManifest(),
  ocsp: 'good',
  watermark: { ran: true, detected: true, payloadHex: PAYLOAD, confidence: 0.97, registered: true, assetId: 'a_1' },
  fingerprint: { ran: false, reason: 'not_available' },
  anchor: { ran: false, reason: 'not_available' },
  ...overrides,
});

const match = { assetId: 'a_1', manifestUri: 'https://x/v1/manifests/m_1', verifierUrl: 'https://x/v/a_1', via: 'watermark' as const, similarity: 1 };

const cases: Array<[Status, Evidence]> = [
  ['verified_manifest_and_watermark_match', base()],
  ['verified_manifest', base({ manifest: validManifest({ softBindingValue: undefined }), watermark: { ran: false, reason: 'not_applicable' } })],
  ['manifest_watermark_conflict', base({ watermark: { ran: true, detected: true, payloadHex: 'ffffffffffffffff', confidence: 0.9, registered: true } })],
  ['manifest_signer_untrusted', base({ manifest: validManifest({ trusted: false }) })],
  ['manifest_signer_revoked', base({ ocsp: 'revoked' })],
  ['manifest_certificate_expired', base({ manifest: validManifest({ certificateExpired: true }) })],
  ['manifest_tampered', base({ manifest: validManifest({ signatureValid: false, validationCodes: ['claimSignature.mismatch'] }) })],
  ['manifest_content_modified', base({ manifest: validManifest({ hardBindingValid: false, validationCodes: ['assertion.dataHash.mismatch'] }) })],
  ['manifest_malformed', base({ manifest: { kind: 'malformed', detail: 'JUMBF box truncated' } })],
  ['manifest_unreachable', base({ manifest: { kind: 'unreachable', url: 'https://elsewhere.example/m.c2pa' } })],
  ['anchor_mismatch', base({ anchor: { ran: true, match: false } })],
  ['watermark_only', base({ manifest: { kind: 'none' }, ocsp: 'not_checked', watermarkMatch: match })],
  ['watermark_unregistered', base({ manifest: { kind: 'none' }, ocsp: 'not_checked', watermark: { ran: true, detected: true, payloadHex: PAYLOAD, confidence: 0.9, registered: false } })],
  ['fingerprint_match_only', base({ manifest: { kind: 'none' }, ocsp: 'not_checked', watermark: { ran: true, detected: false }, fingerprint: { ran: true, matches: [{ ...match, via: 'fingerprint', similarity: 0.93 }] } })],
  ['no_provenance', base({ manifest: { kind: 'none' }, ocsp: 'not_checked', watermark: { ran: true, detected: false } })],
  ['inconclusive', base({ watermark: { ran: false, reason: 'failed', detail: 'UNAVAILABLE' } })],
];

describe('decide: one row per status', () => {
  it('covers all 16 statuses', () => {
    expect(cases.map(([s]) => s).sort()).toEqual([...STATUSES].sort());
  });

  it.each(cases)('%s', (status, evidence) => {
    const verdict = decide(evidence);
    expect(verdict.status).toBe(status);
    expect(verdict.user_explanation.length).toBeGreaterThan(20);
    expect(verdict.developer_explanation.length).toBeGreaterThan(10);
    expect(verdict.does_not_prove.length).toBeGreaterThan(0);
    if (verdict.confidence !== null) {
      expect(verdict.confidence).toBeGreaterThanOrEqual(0);
      expect(verdict.confidence).toBeLessThanOrEqual(1);
    }
  });
});

describe('confidence', () => {
  it('is null exactly for the hard failures', () => {
    const nulls = cases.filter(([, e]) => decide(e).confidence === null).map(([s]) => s).sort();
    expect(nulls).toEqual(['manifest_malformed', 'manifest_signer_revoked', 'manifest_tampered', 'manifest_unreachable']);
  });

  it('is capped low for the "weighted, low" statuses', () => {
    for (const status of ['manifest_watermark_conflict', 'manifest_signer_untrusted', 'manifest_certificate_expired', 'manifest_content_modified', 'anchor_mismatch', 'watermark_unregistered'] as const) {
      const [, evidence] = cases.find(([s]) => s === status)!;
      expect(decide(evidence).confidence).toBeLessThanOrEqual(LOW_CONFIDENCE_CAP);
    }
  });

  it('ranks a manifest and matching watermark above a manifest alone, above a watermark alone', () => {
    const both = decide(base()).confidence!;
    const manifestOnly = decide(base({ manifest: validManifest({ softBindingValue: undefined }), watermark: { ran: false, reason: 'not_applicable' }, ocsp: 'unavailable' })).confidence!;
    const watermarkOnly = decide(cases.find(([s]) => s === 'watermark_only')![1]).confidence!;
    expect(both).toBeGreaterThan(0.9);
    expect(manifestOnly).toBeGreaterThan(watermarkOnly);
    expect(no(decide(cases.find(([s]) => s === 'no_provenance')![1]).confidence)).toBe(0);
  });

  it('weighs an inconclusive result over the signals that ran', () => {
    const verdict = decide(base({ watermark: { ran: false, reason: 'failed' } }));
    expect(verdict.warnings).toContain('watermark_unavailable');
    expect(verdict.confidence).toBeGreaterThan(0.5);
    const noManifest = decide(base({ manifest: { kind: 'none' }, ocsp: 'not_checked', watermark: { ran: false, reason: 'failed' } }));
    expect(noManifest.status).toBe('inconclusive');
    expect(noManifest.confidence).toBe(0);
  });
});

describe('ordering and details', () => {
  it('reports tampering even when a signal service is down', () => {
    expect(decide(base({ manifest: validManifest({ signatureValid: false }), watermark: { ran: false, reason: 'failed' } })).status).toBe('manifest_tampered');
  });

  it('warns when OCSP could not be reached without failing the verdict', () => {
    const verdict = decide(base({ ocsp: 'unavailable' }));
    expect(verdict.status).toBe('verified_manifest_and_watermark_match');
    expect(verdict.warnings).toEqual(['ocsp_unavailable']);
  });

  it('keeps a verified manifest verified when its watermark is not found, with a warning', () => {
    const verdict = decide(base({ watermark: { ran: true, detected: false } }));
    expect(verdict.status).toBe('verified_manifest');
    expect(verdict.warnings).toContain('watermark_not_found');
  });

  it('fills matches for watermark_only and fingerprint_match_only', () => {
    expect(decide(cases.find(([s]) => s === 'watermark_only')![1]).matches).toEqual([match]);
    expect(decide(cases.find(([s]) => s === 'fingerprint_match_only')![1]).matches).toHaveLength(1);
  });

  it('omits claims from hard failures and states who signed when verified', () => {
    expect(decide(cases.find(([s]) => s === 'manifest_tampered')![1]).claims).toBeUndefined();
    const verified = decide(base());
    expect(verified.claims).toMatchObject({ generator: 'ImageGen', model: 'v3', ai_generated: true, signed_by: 'Cairn Signing 1' });
    expect(verified.proves[0]).toBe('The file was signed by Cairn Signing 1 on 2026-11-20.');
    expect(verified.signals).toMatchObject({ c2pa_manifest_present: true, c2pa_signature_valid: true, signer_trusted: true, ocsp_status: 'good', watermark_present: true, watermark_payload_valid: true });
  });
});

function no(value: number | null): number {
  return value ?? -1;
}
