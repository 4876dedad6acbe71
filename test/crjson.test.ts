import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Reader } from '@contentauth/c2pa-node';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import sharp from 'sharp';
import { writeBox, writeSuperbox } from '../packages/jumbf/src/index.js';
import { crJsonReport } from '../services/verifier/src/domain/c2pa/crjson.js';
import { coseTimeStampToken, readTimeStampToken } from '../services/verifier/src/domain/c2pa/timestamp.js';
import { signatureCose } from '../services/verifier/src/domain/c2pa/jumbf.js';
import { bufferAccess, extractManifestStore } from '../services/verifier/src/domain/c2pa/asset-store.js';
import type { ManifestReading } from '../services/verifier/src/domain/c2pa/types.js';
import { makeTestCredential, type TestCredential } from '../services/signer/test/c2pa-fixtures.js';
import { signedElsewhere } from './support/signed-elsewhere.js';
import { multipart, signAndFetch, stackForFile, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';
import { waitFor } from '@cairn/testing';

// The C2PA validation report (crJSON) behind a verdict, checked against the crJSON schema vendored from the
// specification's reference implementation (services/verifier/schemas/README.md), and the trust list that decided.

const FIXTURES = `${SHARED_DIR}/fixtures/c2pa-rs`;
const PHOTO = `${SHARED_DIR}/fixtures/photos/astronaut.png`;
const SCHEMA = new URL('../services/verifier/schemas/crJSON-schema.json', import.meta.url);

type Status = { code: string; url?: string; explanation?: string };
type Codes = { success: Status[]; informational: Status[]; failure: Status[] };
type TrustList = {
  list: string;
  name: string;
  source: string;
  sha256: string;
  certificates: number;
  issuedAt?: string;
  loadedAt?: string;
  frozen?: boolean;
};
type Report = {
  '@context': Record<string, string>;
  manifests: Array<{
    label: string;
    'claim.v2'?: Record<string, unknown>;
    claim?: Record<string, unknown>;
    assertions: Record<string, unknown>;
    signature: {
      algorithm?: string;
      certificateInfo?: { subject: Record<string, string> };
      timeStampInfo?: { timestamp: string; certificateInfo: { subject: Record<string, string> } };
    };
    validationResults: Codes & { validationTime: string; specVersion: string };
    ingredientDeltas?: Array<{ ingredientAssertionURI: string; validationDeltas: Codes }>;
  }>;
  jsonGenerator: { name: string; version: string };
  'cairn:validationState': string | null;
  'cairn:validationTime': string;
  'cairn:trustList': TrustList | null;
  'cairn:trustListsInForce': TrustList[];
};

let validate: (report: unknown) => boolean;
let schemaErrors: () => string;

beforeAll(async () => {
  const ajv = new Ajv2020.default({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const check = ajv.compile(JSON.parse(await readFile(SCHEMA, 'utf8')) as object);
  validate = (report) => check(report);
  schemaErrors = () => ajv.errorsText(check.errors);
});

function expectValid(report: unknown): void {
  const ok = validate(report);
  if (!ok) throw new Error(`crJSON schema: ${schemaErrors()}`);
}

/** Every status code c2pa-rs reports for the file, read here directly with the same library (default settings). */
async function readerCodes(bytes: Buffer): Promise<string[]> {
  const reader = await Reader.fromAsset({ buffer: bytes, mimeType: 'image/jpeg' });
  const store = reader?.json() as unknown as {
    validation_results?: { activeManifest?: Codes; ingredientDeltas?: Array<{ validationDeltas: Codes }> };
  };
  const groups = [
    store?.validation_results?.activeManifest,
    ...(store?.validation_results?.ingredientDeltas ?? []).map((d) => d.validationDeltas),
  ];
  return groups.flatMap((g) => (g ? [...g.success, ...g.informational, ...g.failure].map((s) => s.code) : []));
}

function reportCodes(report: Report): string[] {
  const all = (c: Codes) => [...c.success, ...c.informational, ...c.failure].map((s) => s.code);
  return report.manifests.flatMap((m) => [
    ...all(m.validationResults),
    ...(m.ingredientDeltas ?? []).flatMap((d) => all(d.validationDeltas)),
  ]);
}

describe('crJSON validation reports under the default trust list', () => {
  const file = stackForFile(['watermark', 'signer', 'verifier', 'gateway'], { PUBLIC_VERIFY_PER_MINUTE: '1000' });

  const publicVerify = (bytes: Buffer, query = '', headers: Record<string, string> = {}) =>
    file.stack.request(`/v1/verify${query}`, {
      method: 'POST',
      headers,
      body: multipart({}, { field: 'file', bytes, name: 'f' }),
    });

  it.each([
    ['CA.jpg', 'Valid', 'signingCredential.untrusted'],
    ['C.jpg', 'Valid', 'signingCredential.untrusted'],
    ['XCA.jpg', 'Well-Formed', 'assertion.dataHash.mismatch'],
    ['E-sig-CA.jpg', 'Well-Formed', 'claimSignature.mismatch'],
  ])(
    '%s: the report validates, holds every status code c2pa-rs gives, and says %s',
    async (file, state, failure) => {
      const bytes = await readFile(`${FIXTURES}/${file}`);
      const res = await publicVerify(bytes, '?format=crjson');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/ld\+json/);
      const report = (await res.json()) as Report;
      expectValid(report);
      expect(report['cairn:validationState']).toBe(state);
      expect(report.manifests.length).toBeGreaterThan(0);
      const active = report.manifests[0]!;
      expect(active.validationResults.failure.map((s) => s.code)).toContain(failure);
      const codes = new Set(reportCodes(report));
      for (const code of await readerCodes(bytes)) expect(codes).toContain(code);
      // Untrusted: no list decided, and the lists in force are named with their snapshot.
      expect(report['cairn:trustList']).toBeNull();
      const lists = report['cairn:trustListsInForce'].map((l) => l.list);
      expect(lists).toEqual(expect.arrayContaining(['cairn', 'c2pa', 'c2pa_tsa', 'interim']));
      const official = report['cairn:trustListsInForce'].find((l) => l.list === 'c2pa')!;
      expect(official).toMatchObject({
        name: 'C2PA Trust List',
        certificates: 30,
        issuedAt: '2026-08-05T00:11:39.000Z',
      });
      const shipped = await readFile(
        new URL('../services/verifier/src/trust-lists/C2PA-TRUST-LIST.pem', import.meta.url),
      );
      expect(official.sha256).toBe(createHash('sha256').update(shipped).digest('hex'));
      expect(report['cairn:trustListsInForce'].find((l) => l.list === 'interim')).toMatchObject({ frozen: true });
    },
    30_000,
  );

  it('a report names every manifest of the store, the active one first, with its ingredient deltas', async () => {
    const bytes = await readFile(`${FIXTURES}/CA.jpg`);
    const report = (await (await publicVerify(bytes, '?format=crjson')).json()) as Report;
    const reader = await Reader.fromAsset({ buffer: bytes, mimeType: 'image/jpeg' });
    const store = reader?.json() as unknown as { manifests: Record<string, unknown> };
    expect(report.manifests.map((m) => m.label).sort()).toEqual(Object.keys(store.manifests).sort());
    expect(report.manifests[0]!.label).toBe(reader?.activeLabel());
    // CA.jpg's ingredient (A.jpg) has no provenance: c2pa-rs says so in the active manifest's ingredient deltas.
    expect(report.manifests[0]!.ingredientDeltas?.[0]).toMatchObject({
      ingredientAssertionURI: expect.stringContaining('c2pa.ingredient'),
      validationDeltas: { informational: [expect.objectContaining({ code: 'ingredient.unknownProvenance' })] },
    });
    // Its signature is time-stamped (DigiCert): the report says when and by which TSA, as c2pa-rs read it.
    const active = store.manifests[reader!.activeLabel()!] as { signature_info: { time: string } };
    const stamp = report.manifests[0]!.signature.timeStampInfo!;
    expect(Date.parse(stamp.timestamp)).toBe(Date.parse(active.signature_info.time));
    expect(stamp.certificateInfo.subject.CN).toMatch(/DigiCert.*Timestamp/i);
    for (const m of report.manifests) {
      expect(m.signature.algorithm).toMatch(/^((ES|PS)\d{3}|Ed25519)$/);
      expect(m.claim ?? m['claim.v2']).toBeDefined();
      expect(Object.keys(m.assertions).length).toBeGreaterThan(0);
    }
  }, 30_000);

  it('a file without a manifest, and a remote reference, answer a valid report with no manifest and say why', async () => {
    for (const [file, note] of [
      ['no_manifest.jpg', { found: false }],
      ['sample1.wav', { found: false }],
      ['cloud.jpg', { found: false, remoteUrl: expect.stringMatching(/^https?:\/\//) }],
    ] as const) {
      const res = await publicVerify(await readFile(`${FIXTURES}/${file}`), '?format=crjson');
      expect(res.status).toBe(200);
      const report = (await res.json()) as Report & { 'cairn:manifestStore': unknown };
      expectValid(report);
      expect(report.manifests).toEqual([]);
      expect(report['cairn:manifestStore']).toMatchObject(note);
    }
  }, 30_000);

  it('a store too deeply nested to parse answers a valid report: Invalid, with why', async () => {
    const res = await publicVerify(await readFile(`${FIXTURES}/nested_moov_1000.mp4`), '?format=crjson');
    expect(res.status).toBe(200);
    const report = (await res.json()) as Report & { 'cairn:manifestStore': { found: boolean; detail?: string } };
    expectValid(report);
    expect(report.manifests).toEqual([]);
    // c2pa-rs refuses the file (boxes nested too deeply): a store that cannot be parsed, not a missing one.
    expect(report['cairn:validationState']).toBe('Invalid');
    expect(report['cairn:manifestStore']).toMatchObject({ found: true, detail: expect.stringMatching(/nest/i) });
  }, 30_000);

  it('Accept: application/ld+json asks for the report; JSON, no preference or ?format=verdict keep the verdict', async () => {
    const bytes = await readFile(`${FIXTURES}/C.jpg`);
    const negotiated = await publicVerify(bytes, '', { accept: 'application/ld+json' });
    expect(negotiated.headers.get('content-type')).toMatch(/^application\/ld\+json/);
    expect(negotiated.headers.get('vary')).toMatch(/Accept/i);
    expectValid(await negotiated.json());
    for (const [query, headers] of [
      ['', {}],
      ['', { accept: 'application/json' }],
      ['?format=verdict', { accept: 'application/ld+json' }],
    ] as const) {
      const res = await publicVerify(bytes, query, headers);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(((await res.json()) as { status: string }).status).toBe('manifest_signer_untrusted');
    }
  }, 30_000);

  it('an unknown format is a 400 problem, not a verdict', async () => {
    const res = await publicVerify(await readFile(`${FIXTURES}/C.jpg`), '?format=xml');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe('cairn.validation.invalid_body');
  });

  it('GET /v1/verify/{manifest_id}?format=crjson answers the report of the stored verdict’s own reading', async () => {
    const photo = await sharp(await readFile(PHOTO))
      .resize(512)
      .jpeg({ quality: 90 })
      .toBuffer();
    const { signed } = await signAndFetch<{ asset_id: string; manifest_id: string }>(file.stack, file.tenant.api_key, {
      recipe: 'image-capture-v1',
      bytes: photo,
      name: 'p.jpg',
    });
    const path = `/v1/verify/${signed.manifest_id}`;
    type Verdict = { status: string; verified_at: string };
    const readVerdict = async () =>
      (await (await file.stack.request(path, { key: file.tenant.api_key })).json()) as Verdict;
    const readReport = async (how: 'query' | 'accept') => {
      const res =
        how === 'query'
          ? await file.stack.request(`${path}?format=crjson`, { key: file.tenant.api_key })
          : await file.stack.request(path, { key: file.tenant.api_key, headers: { accept: 'application/ld+json' } });
      expect(res.status).toBe(200);
      return (await res.json()) as Report;
    };
    // The sign's own background verdict may land just after a first GET made one: read until the stored verdict
    // holds still across both report requests, so all three answers are of one stored reading.
    const { verdict, report, byAccept } = await waitFor(
      'a stored verdict that holds still',
      async () => {
        const before = await readVerdict();
        const report = await readReport('query');
        const byAccept = await readReport('accept');
        const after = await readVerdict();
        return before.verified_at === after.verified_at ? { verdict: after, report, byAccept } : undefined;
      },
      30_000,
      200,
    );
    expect(verdict.status).toBe('verified_manifest');
    expectValid(report);
    expect(report['cairn:validationState']).toBe('Trusted');
    // The same reading: the report was made when the verdict was, and the verdict did not change since.
    expect(report['cairn:validationTime']).toBe(verdict.verified_at);
    expect(report.manifests[0]!.validationResults.validationTime).toBe(verdict.verified_at);
    expect(report.manifests[0]!.validationResults.success.map((s) => s.code)).toContain('signingCredential.trusted');
    expect(report['cairn:trustList']).toMatchObject({ list: 'cairn', source: 'signer', certificates: 1 });
    expect(byAccept).toEqual(report);
    expect((await file.stack.request(`${path}?format=crjson`)).status).toBe(401);
  }, 60_000);

  it('a verdict kept before reports were is computed again for its report; past its file’s retention it has none', async () => {
    const photo = await sharp(await readFile(PHOTO))
      .resize(320)
      .jpeg({ quality: 85 })
      .toBuffer();
    const { signed } = await signAndFetch<{ asset_id: string; manifest_id: string }>(file.stack, file.tenant.api_key, {
      recipe: 'image-capture-v1',
      bytes: photo,
      name: 'old.jpg',
    });
    const path = `/v1/verify/${signed.manifest_id}`;
    await file.stack.request(path, { key: file.tenant.api_key });
    const db = await file.stack.sandbox.adminClient();
    try {
      // The sign's own background verdict (asset.signed) rewrites the row when it lands: the rows below are
      // written only once it has, or it would overwrite them (the verifier claims the event as it commits).
      await waitFor(
        'the verifier to have made the sign’s own verdict',
        async () => {
          const { rows } = await db.query(
            `SELECT 1 FROM signer.outbox o JOIN verifier.processed_events p
               ON p.event_id = o.event_id AND p.consumer = 'verifier-results'
             WHERE o.subject LIKE '%asset.signed' AND o.envelope->'data'->>'manifest_id' = $1`,
            [signed.manifest_id],
          );
          return rows.length === 1 || undefined;
        },
        30_000,
        100,
      );
      // As a row written before the report column: the verdict alone.
      await db.query('UPDATE verifier.results SET report = NULL WHERE manifest_id = $1', [signed.manifest_id]);
      const report = (await (
        await file.stack.request(`${path}?format=crjson`, { key: file.tenant.api_key })
      ).json()) as Report;
      expectValid(report);
      const verdict = (await (await file.stack.request(path, { key: file.tenant.api_key })).json()) as {
        verified_at: string;
      };
      expect(report['cairn:validationTime']).toBe(verdict.verified_at);
      // Its file past retention: the verdict stands, but no reading is left to make a report from.
      await db.query(
        "UPDATE verifier.results SET report = NULL, expires_at = now() - interval '1 second' WHERE manifest_id = $1",
        [signed.manifest_id],
      );
      const gone = await file.stack.request(`${path}?format=crjson`, { key: file.tenant.api_key });
      expect(gone.status).toBe(404);
      expect(((await gone.json()) as { code: string; detail: string }).detail).toMatch(/No validation report/);
      expect((await file.stack.request(path, { key: file.tenant.api_key })).status).toBe(200);
    } finally {
      await db.end();
    }
  }, 60_000);
});

describe('the frozen interim trust list', () => {
  let stack: Stack;
  let dir: string;
  let official: TestCredential;
  let both: TestCredential;
  let interimOnly: TestCredential;
  let photo: Buffer;
  let interimFile: string;

  beforeAll(async () => {
    [official, both, interimOnly] = await Promise.all([
      makeTestCredential({ commonName: 'On The Official List' }),
      makeTestCredential({ commonName: 'On Both Lists' }),
      makeTestCredential({ commonName: 'On The Interim List Only' }),
    ]);
    dir = await mkdtemp(join(tmpdir(), 'cairn-interim-'));
    await writeFile(join(dir, 'c2pa.pem'), official.caCertPem + both.caCertPem);
    interimFile = join(dir, 'interim.pem');
    await writeFile(interimFile, both.caCertPem + interimOnly.caCertPem);
    stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], {
      PUBLIC_VERIFY_PER_MINUTE: '1000',
      C2PA_TRUST_LIST: join(dir, 'c2pa.pem'),
      C2PA_INTERIM_TRUST_LIST: interimFile,
    });
    photo = await sharp(await readFile(PHOTO))
      .resize(384)
      .jpeg({ quality: 90 })
      .toBuffer();
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const signedBy = (credential: TestCredential) => signedElsewhere(photo, credential);
  const verify = async (bytes: Buffer, query = '') =>
    stack.request(`/v1/verify${query}`, {
      method: 'POST',
      body: multipart({}, { field: 'file', bytes, name: 'f.jpg' }),
    });

  it('a signer chaining only to the interim list is trusted, with the interim_trust_list warning', async () => {
    const file = await signedBy(interimOnly);
    const verdict = (await (await verify(file)).json()) as {
      status: string;
      warnings: string[];
      developer_explanation: string;
    };
    expect(verdict.status).toBe('verified_manifest');
    expect(verdict.warnings).toContain('interim_trust_list');
    expect(verdict.developer_explanation).toContain('frozen interim trust list');
    const report = (await (await verify(file, '?format=crjson')).json()) as Report;
    expectValid(report);
    expect(report['cairn:validationState']).toBe('Trusted');
    expect(report['cairn:trustList']).toMatchObject({
      list: 'interim',
      frozen: true,
      source: `file ${interimFile}`,
      certificates: 2,
      sha256: createHash('sha256')
        .update(await readFile(interimFile))
        .digest('hex'),
    });
  }, 60_000);

  it('a signer on the official list (even if also on the interim one) is trusted by the official list, no warning', async () => {
    for (const credential of [official, both]) {
      const file = await signedBy(credential);
      const verdict = (await (await verify(file)).json()) as { status: string; warnings: string[] };
      expect(verdict.status).toBe('verified_manifest');
      expect(verdict.warnings).not.toContain('interim_trust_list');
      const report = (await (await verify(file, '?format=crjson')).json()) as Report;
      expect(report['cairn:trustList']).toMatchObject({ list: 'c2pa', source: `file ${join(dir, 'c2pa.pem')}` });
    }
  }, 60_000);

  it('the verify page says the signer is trusted through the interim list only', async () => {
    const res = await stack.request('/verify', {
      method: 'POST',
      body: multipart({}, { field: 'file', bytes: await signedBy(interimOnly), name: 'f.jpg' }),
    });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('data-trust-list="interim"');
    expect(html).toContain('interim trust list only');
    const officialHtml = await (
      await stack.request('/verify', {
        method: 'POST',
        body: multipart({}, { field: 'file', bytes: await signedBy(official), name: 'f.jpg' }),
      })
    ).text();
    expect(officialHtml).not.toContain('data-trust-list="interim"');
  }, 60_000);
});

describe('hostile manifest stores (fast-check)', () => {
  // A store c2pa-rs read as a manifest may still hold anything an attacker signed (or failed to sign): the report of
  // it is made without throwing, stays JSON and stays bounded, whatever its boxes hold.
  const content = fc.oneof(
    fc.uint8Array({ maxLength: 256 }).map((b) => writeBox('cbor', b)),
    fc.uint8Array({ maxLength: 64 }).map((b) => writeBox('json', b)),
    fc
      .constantFrom('[', '{"a":', '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]')
      .map((t) => writeBox('json', Buffer.from(t))),
    // Indefinite-length CBOR maps and arrays left open, nested, or broken in the middle.
    fc
      .constantFrom(
        Buffer.from([0xbf, 0x61, 0x61, 0x9f, 0x01, 0x02]),
        Buffer.from(new Array(200).fill(0x9f)),
        Buffer.from([0x5f, 0x41, 0x00, 0x61, 0x61, 0xff]),
      )
      .map((b) => writeBox('cbor', b)),
    fc.uint8Array({ maxLength: 32 }).map((b) => writeBox('bidb', b)),
  );
  const label = fc.constantFrom(
    'c2pa.claim.v2',
    'c2pa.claim',
    'c2pa.actions.v2',
    'c2pa.hash.data',
    'c2pa.signature',
    'x',
  );
  const superbox = fc.tuple(label, fc.array(content, { maxLength: 3 })).map(([l, c]) => writeSuperbox(l, c));
  const manifest = fc
    .tuple(
      fc.constantFrom('urn:c2pa:a', 'urn:c2pa:b', ''),
      fc.array(superbox, { maxLength: 4 }),
      fc.array(superbox, { maxLength: 4 }),
    )
    .map(([l, direct, assertions]) => writeSuperbox(l, [...direct, writeSuperbox('c2pa.assertions', assertions)]));
  const store = fc
    .tuple(fc.array(manifest, { maxLength: 3 }), fc.uint8Array({ maxLength: 16 }))
    .map(([manifests, tail]) => Buffer.concat([writeSuperbox('c2pa', manifests), tail]));

  it('never throws, answers JSON, and holds only the codes it was given', () => {
    fc.assert(
      fc.property(store, fc.constantFrom('urn:c2pa:a', 'urn:c2pa:b', 'urn:c2pa:none'), (bytes, active) => {
        const reading: ManifestReading = {
          kind: 'manifest',
          activeLabel: active,
          validationState: 'Invalid',
          signatureValid: false,
          assertionsValid: false,
          hardBindingValid: false,
          trusted: false,
          certificateExpired: false,
          revoked: false,
          ocspStatus: 'not_checked',
          timestamped: false,
          timestampTrusted: false,
          signer: { certChainPem: [] },
          claims: { aiGenerated: false, aiAssisted: false },
          softBindings: [],
          validationCodes: ['claim.malformed'],
          validationEntries: [
            { code: 'claim.malformed', kind: 'failure', scope: 'active', url: 'self#jumbf=/c2pa/urn:c2pa:b' },
          ],
          manifestStore: bytes,
        };
        const report = crJsonReport(reading, {
          validationTime: '2026-11-28T08:00:00.000Z',
          generator: { name: 'test', version: '1.0.0' },
          trust: { decidedBy: null, inForce: [] },
        }) as unknown as Report;
        const text = JSON.stringify(report);
        expect(text.length).toBeLessThan(8 * 1024 * 1024);
        expect(report['cairn:validationState']).toBe('Invalid');
        expect(reportCodes(report).every((code) => code === 'claim.malformed')).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('a time-stamp token with any of its bytes changed is read or refused, never thrown', async () => {
    // The DigiCert token of CA.jpg's signature (a TimeStampResp), read by hand from the file's store.
    const store = extractManifestStore(bufferAccess(await readFile(`${FIXTURES}/CA.jpg`)))!;
    const reader = await Reader.fromAsset({ buffer: await readFile(`${FIXTURES}/CA.jpg`), mimeType: 'image/jpeg' });
    const cose = signatureCose(store, reader!.activeLabel()!)!;
    expect(coseTimeStampToken(cose)?.time).toBe('2024-08-06T21:53:37.000Z');
    const tokenAt = Buffer.from(cose).indexOf(Buffer.from([0x30, 0x82, 0x17, 0x3d]));
    const token = Buffer.from(cose.subarray(tokenAt, tokenAt + 4 + 0x173d));
    expect(readTimeStampToken(token)).toBeDefined();
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(token.length - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
        fc.nat(token.length),
        (edits, cut) => {
          const bytes = Buffer.from(token.subarray(0, Math.max(1, cut)));
          for (const [at, value] of edits) if (at < bytes.length) bytes[at] = value;
          const read = readTimeStampToken(bytes);
          if (read) expect(Number.isNaN(Date.parse(read.time))).toBe(false);
        },
      ),
      { numRuns: 500 },
    );
  });
});
