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
  claims: {
    generator: 'ImageGen',
    model: 'v3',
    aiGenerated: true,
    aiAssisted: false,
    createdAt: '2026-11-20T09:59:00Z',
  },
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

const match = {
  assetId: 'a_1',
  manifestUri: 'https://x/v1/manifests/m_1',
  verifierUrl: 'https://x/v/a_1',
  via: 'watermark' as const,
  similarity: 1,
};

const cases: Array<[Status, Evidence]> = [
  ['verified_manifest_and_watermark_match', base()],
  [
    'verified_manifest',
    base({
      manifest: validManifest({ softBindingValue: undefined }),
      watermark: { ran: false, reason: 'not_applicable' },
    }),
  ],
  [
    'manifest_watermark_conflict',
    base({
      watermark: { ran: true, detected: true, payloadHex: 'ffffffffffffffff', confidence: 0.9, registered: true },
    }),
  ],
  ['manifest_signer_untrusted', base({ manifest: validManifest({ trusted: false }) })],
  ['manifest_signer_revoked', base({ ocsp: 'revoked' })],
  ['manifest_certificate_expired', base({ manifest: validManifest({ certificateExpired: true }) })],
  [
    'manifest_tampered',
    base({ manifest: validManifest({ signatureValid: false, validationCodes: ['claimSignature.mismatch'] }) }),
  ],
  [
    'manifest_content_modified',
    base({ manifest: validManifest({ hardBindingValid: false, validationCodes: ['assertion.dataHash.mismatch'] }) }),
  ],
  ['manifest_malformed', base({ manifest: { kind: 'malformed', detail: 'JUMBF box truncated' } })],
  ['manifest_unreachable', base({ manifest: { kind: 'unreachable', url: 'https://elsewhere.example/m.c2pa' } })],
  ['anchor_mismatch', base({ anchor: { ran: true, match: false } })],
  ['watermark_only', base({ manifest: { kind: 'none' }, ocsp: 'not_checked', watermarkMatch: match })],
  [
    'watermark_unregistered',
    base({
      manifest: { kind: 'none' },
      ocsp: 'not_checked',
      watermark: { ran: true, detected: true, payloadHex: PAYLOAD, confidence: 0.9, registered: false },
    }),
  ],
  [
    'fingerprint_match_only',
    base({
      manifest: { kind: 'none' },
      ocsp: 'not_checked',
      watermark: { ran: true, detected: false },
      fingerprint: { ran: true, matches: [{ ...match, via: 'fingerprint', similarity: 0.93 }] },
    }),
  ],
  [
    'no_provenance',
    base({ manifest: { kind: 'none' }, ocsp: 'not_checked', watermark: { ran: true, detected: false } }),
  ],
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
    const nulls = cases
      .filter(([, e]) => decide(e).confidence === null)
      .map(([s]) => s)
      .sort();
    expect(nulls).toEqual([
      'manifest_malformed',
      'manifest_signer_revoked',
      'manifest_tampered',
      'manifest_unreachable',
    ]);
  });

  it('is capped low for the "weighted, low" statuses', () => {
    for (const status of [
      'manifest_watermark_conflict',
      'manifest_signer_untrusted',
      'manifest_certificate_expired',
      'manifest_content_modified',
      'anchor_mismatch',
      'watermark_unregistered',
    ] as const) {
      const [, evidence] = cases.find(([s]) => s === status)!;
      expect(decide(evidence).confidence).toBeLessThanOrEqual(LOW_CONFIDENCE_CAP);
    }
  });

  it('ranks a manifest and matching watermark above a manifest alone, above a watermark alone, above a fingerprint alone, above nothing', () => {
    const both = decide(base()).confidence!;
    const manifestOnly = decide(
      base({
        manifest: validManifest({ softBindingValue: undefined }),
        watermark: { ran: false, reason: 'not_applicable' },
      }),
    ).confidence!;
    const watermarkOnly = decide(cases.find(([s]) => s === 'watermark_only')![1]).confidence!;
    const fingerprintOnly = decide(cases.find(([s]) => s === 'fingerprint_match_only')![1]).confidence!;
    const nothing = decide(cases.find(([s]) => s === 'no_provenance')![1]).confidence;
    expect(both).toBeGreaterThan(manifestOnly);
    expect(manifestOnly).toBeGreaterThan(watermarkOnly);
    expect(watermarkOnly).toBeGreaterThan(fingerprintOnly);
    expect(fingerprintOnly).toBeGreaterThan(0);
    expect(nothing).toBe(0);
  });

  it('never lowers confidence when an independent agreeing signal is added to any set of evidence', () => {
    const violations: string[] = [];
    let compared = 0;
    for (const set of evidenceSets()) {
      for (const signal of AGREEING) {
        if (set.has.has(signal)) continue;
        const more = evidenceSets().find(
          (other) =>
            other.failed === set.failed &&
            other.wmConfidence === set.wmConfidence &&
            other.similarity === set.similarity &&
            sameSignals(other.has, new Set([...set.has, signal])),
        );
        if (!more) continue;
        compared++;
        const before = decide(set.evidence);
        const after = decide(more.evidence);
        if ((after.confidence ?? -1) < (before.confidence ?? -1)) {
          violations.push(
            `${describeSet(set)} (${before.status} ${before.confidence}) + ${signal} → ${after.status} ${after.confidence}`,
          );
        }
      }
    }
    expect(compared).toBeGreaterThan(100);
    expect(violations).toEqual([]);
  });

  it('weighs an inconclusive result over the signals that ran', () => {
    const verdict = decide(base({ watermark: { ran: false, reason: 'failed' } }));
    expect(verdict.warnings).toContain('watermark_unavailable');
    expect(verdict.confidence).toBeGreaterThan(0.5);
    const noManifest = decide(
      base({ manifest: { kind: 'none' }, ocsp: 'not_checked', watermark: { ran: false, reason: 'failed' } }),
    );
    expect(noManifest.status).toBe('inconclusive');
    expect(noManifest.confidence).toBe(0);
  });
});

describe('ordering and details', () => {
  it('reports tampering even when a signal service is down', () => {
    expect(
      decide(base({ manifest: validManifest({ signatureValid: false }), watermark: { ran: false, reason: 'failed' } }))
        .status,
    ).toBe('manifest_tampered');
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

  it('a registered mark on content that is not its asset’s names no asset: no match, capped, warned', () => {
    const verdict = decide(
      base({
        manifest: { kind: 'none' },
        ocsp: 'not_checked',
        watermark: {
          ran: true,
          detected: true,
          payloadHex: PAYLOAD,
          confidence: 0.97,
          registered: true,
          assetId: 'a_1',
          contentConsistent: false,
        },
        watermarkMatch: match,
      }),
    );
    expect(verdict.status).toBe('watermark_only');
    expect(verdict.warnings).toContain('watermark_content_mismatch');
    expect(verdict.matches).toEqual([]);
    expect(verdict.confidence).toBeLessThanOrEqual(0.35);
    expect(JSON.stringify(verdict)).not.toContain('a_1');
  });

  it('omits claims from hard failures and states who signed when verified', () => {
    expect(decide(cases.find(([s]) => s === 'manifest_tampered')![1]).claims).toBeUndefined();
    const verified = decide(base());
    expect(verified.claims).toMatchObject({
      generator: 'ImageGen',
      model: 'v3',
      ai_generated: true,
      signed_by: 'Cairn Signing 1',
    });
    expect(verified.proves[0]).toBe('The file was signed by Cairn Signing 1 on 2026-11-20.');
    expect(verified.signals).toMatchObject({
      c2pa_manifest_present: true,
      c2pa_signature_valid: true,
      signer_trusted: true,
      ocsp_status: 'good',
      watermark_present: true,
      watermark_payload_valid: true,
    });
  });
});

describe('a Cairn asset signed with its tenant’s own key (BYOK)', () => {
  it('says so in the claims, the sentences and what is not proved; Cairn’s own key is named as such', () => {
    const tenant = decide(
      base({
        manifest: validManifest({
          signerName: "Acme Newsroom — Newsroom Signer (the tenant's own key)",
          signingKey: 'tenant',
          trusted: false,
        }),
      }),
    );
    expect(tenant.status).toBe('manifest_signer_untrusted');
    expect(tenant.claims).toMatchObject({
      signed_by: "Acme Newsroom — Newsroom Signer (the tenant's own key)",
      signing_key: 'tenant',
    });
    expect(tenant.user_explanation).toContain("(the tenant's own key)");
    expect(tenant.does_not_prove.join(' ')).toContain('signing tenant’s own key');
    const cairn = decide(base({ manifest: validManifest({ signingKey: 'cairn' }) }));
    expect(cairn.claims?.signing_key).toBe('cairn');
    expect(cairn.does_not_prove.join(' ')).not.toContain('tenant');
    expect(decide(base()).claims).not.toHaveProperty('signing_key');
  });
});

/** The signals that, present, agree with the result: a Cairn manifest and what independently confirms it. */
const AGREEING = ['manifest', 'ocsp_good', 'watermark', 'fingerprint', 'anchor'] as const;
type Agreeing = (typeof AGREEING)[number];

interface EvidenceSet {
  has: Set<Agreeing>;
  /** The watermark service failed (the inconclusive branch); the watermark signal is then absent. */
  failed: boolean;
  wmConfidence: number;
  similarity: number;
  evidence: Evidence;
}

const sameSignals = (a: Set<Agreeing>, b: Set<Agreeing>) => a.size === b.size && [...a].every((x) => b.has(x));
const describeSet = (set: EvidenceSet) =>
  `{${[...set.has].join(', ')}}${set.failed ? ' watermark service down' : ''} wm=${set.wmConfidence} fp=${set.similarity}`;

/**
 * Every combination of the agreeing signals, at a weak and a strong watermark read and fingerprint similarity,
 * with the watermark service up and down. An absent signal is what the verifier reports when it found nothing:
 * no manifest, OCSP not checked, watermark not detected, no fingerprint match, anchor not available.
 */
function evidenceSets(): EvidenceSet[] {
  const sets: EvidenceSet[] = [];
  for (const failed of [false, true]) {
    for (const wmConfidence of [0.35, 0.97]) {
      for (const similarity of [0.6, 1]) {
        for (let mask = 0; mask < 1 << AGREEING.length; mask++) {
          const has = new Set(AGREEING.filter((_, i) => mask & (1 << i)));
          // OCSP and the anchor check a manifest's certificate and digest: without a manifest they do not run.
          if (!has.has('manifest') && (has.has('ocsp_good') || has.has('anchor'))) continue;
          if (failed && has.has('watermark')) continue;
          const evidence: Evidence = {
            manifest: has.has('manifest') ? validManifest() : { kind: 'none' },
            ocsp: has.has('ocsp_good') ? 'good' : has.has('manifest') ? 'unavailable' : 'not_checked',
            watermark: failed
              ? { ran: false, reason: 'failed' }
              : has.has('watermark')
                ? {
                    ran: true,
                    detected: true,
                    payloadHex: PAYLOAD,
                    confidence: wmConfidence,
                    registered: true,
                    assetId: 'a_1',
                  }
                : { ran: true, detected: false },
            fingerprint: {
              ran: true,
              matches: has.has('fingerprint') ? [{ ...match, via: 'fingerprint', similarity }] : [],
            },
            anchor: has.has('anchor') ? { ran: true, match: true } : { ran: false, reason: 'not_available' },
            ...(has.has('watermark') ? { watermarkMatch: match } : {}),
          };
          sets.push({ has, failed, wmConfidence, similarity, evidence });
        }
      }
    }
  }
  return sets;
}
