import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdir, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Builder } from '@contentauth/c2pa-node';
import sharp from 'sharp';
import { newId } from '@cairn/ids';
import { waitFor } from '@cairn/testing';
import { createBlobStore } from '../packages/blob/src/index.js';
import { activeManifestLabel, manifestLabels } from '../packages/jumbf/src/index.js';
import { hashImageBytes } from '../services/softbinding/src/adapters/image-hash.js';
import { localSignerFor, makeTestCredential } from '../services/signer/test/c2pa-fixtures.js';
import { bufferAccess, extractManifestStore } from '../services/verifier/src/domain/c2pa/asset-store.js';
import { watermarkBindingOf } from './support/soft-binding.js';
import { degradedCopy, signAstronaut, untilIndexed } from './support/lookup.js';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// The C2PA Soft Binding Resolution API (/c2pa/v1): public, no key anywhere in this file except to sign.
const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
const API = '/c2pa/v1';
let stack: Stack;
let owner: { tenant_id: string; api_key: string };
let signed: { asset_id: string; watermark_id: string; manifest_uri: string };
let manifestId: string;
let signedBytes: Buffer;
let copy: Buffer;

interface SpecMatch {
  manifestId: string;
  endpoint?: string;
  similarityScore?: number;
}

function byContent(bytes: Buffer, query = '', type = 'image/jpeg') {
  return stack.request(`${API}/matches/byContent${query}`, {
    method: 'POST',
    headers: { 'content-type': type },
    body: bytes,
  });
}

function byBinding(alg: string, value: string, extra = '') {
  return stack.request(
    `${API}/matches/byBinding?alg=${encodeURIComponent(alg)}&value=${encodeURIComponent(value)}${extra}`,
  );
}

async function matchesOf(res: Response): Promise<SpecMatch[]> {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await res.json()) as { matches: SpecMatch[] };
  // Only the spec's fields: nothing about tenants, assets or storage.
  for (const m of body.matches) {
    expect(Object.keys(m).every((k) => ['manifestId', 'endpoint', 'similarityScore'].includes(k))).toBe(true);
    if (m.similarityScore !== undefined) {
      expect(Number.isInteger(m.similarityScore)).toBe(true);
      expect(m.similarityScore).toBeGreaterThanOrEqual(0);
      expect(m.similarityScore).toBeLessThanOrEqual(100);
    }
  }
  expect(JSON.stringify(body)).not.toContain(owner.tenant_id);
  expect(JSON.stringify(body)).not.toMatch(/"t_|"a_|uploads\//);
  return body.matches;
}

/** `signed` edited by another party: c2pa-node signs it anew with `signed` itself as the parent ingredient. */
async function editedWithParent(signed: Buffer): Promise<Buffer> {
  const credential = await makeTestCredential({ commonName: 'Another Editor' });
  const builder = Builder.withJson({
    claim_generator_info: [{ name: 'another-editor', version: '1.0.0' }],
    title: 'edited.jpg',
    assertions: [{ label: 'c2pa.actions', data: { actions: [{ action: 'c2pa.edited' }] } }],
  });
  await builder.addIngredient(JSON.stringify({ title: 'original.jpg', relationship: 'parentOf' }), {
    buffer: signed,
    mimeType: 'image/jpeg',
  });
  const out: { buffer: Buffer | null } = { buffer: null };
  builder.sign(localSignerFor(credential), { buffer: signed, mimeType: 'image/jpeg' }, out);
  if (!out.buffer) throw new Error('c2pa-node returned no signed file');
  return out.buffer;
}

async function expectProblem(res: Response, status: number, code?: string): Promise<void> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const problem = (await res.json()) as Record<string, unknown>;
  expect(problem).toMatchObject({
    status,
    title: expect.any(String),
    detail: expect.any(String),
    request_id: expect.stringMatching(/^req_/),
  });
  if (code) expect(problem.code).toBe(code);
}

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    PUBLIC_RESOLUTION_PER_MINUTE: '1000',
    REFERENCE_FETCHES_AT_ONCE: '2',
  });
  owner = await onboard(stack);
  ({ signed, signedBytes } = await signAstronaut<typeof signed>(stack, owner.api_key));
  manifestId = signed.manifest_uri.split('/').at(-1)!;
  copy = await degradedCopy(signedBytes);
  // Wait until the public lookup sees it.
  await untilIndexed(() => byContent(signedBytes, '?alg=cairn.pdq.v1'));
}, 120_000);
afterAll(() => stack?.stop());

describe(`GET ${API}/services/supportedAlgorithms`, () => {
  it('lists the fingerprint and the watermark Cairn resolves, in the spec’s shape', async () => {
    const res = await stack.request(`${API}/services/supportedAlgorithms`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { watermarks: Array<{ alg: string }>; fingerprints: Array<{ alg: string }> };
    // Every fingerprint Cairn computes, the image one (by value or content) first; nothing it does not.
    expect(body.fingerprints).toEqual([
      { alg: 'cairn.pdq.v1' },
      { alg: 'cairn.pdq-frames.v1' },
      { alg: 'cairn.audio-peaks.v1' },
      { alg: 'cairn.minhash.v1' },
    ]);
    // The watermark new signs carry, and the keyed and keyless ones of marks issued before it.
    expect(body.watermarks).toEqual([{ alg: 'cairn-sync-v2' }, { alg: 'cairn-dct-keyed-v1' }, { alg: 'cairn-dct-v1' }]);
  });
});

describe(`POST ${API}/matches/byContent`, () => {
  it('finds the manifest of a signed image re-encoded, resized and cropped (its manifest stripped), with the best similarity any algorithm gives it', async () => {
    // 0.5×, JPEG q60, 5 % cropped: the watermark may still read here (weakly, depending on the key) and the
    // fingerprint finds it close; either way one match, scored as close as the fingerprint says it is.
    const byFingerprint = await matchesOf(await byContent(copy, '?alg=cairn.pdq.v1&maxResults=1'));
    expect(byFingerprint[0]?.manifestId).toBe(manifestId);
    expect(byFingerprint[0]!.similarityScore!).toBeGreaterThan(80);
    const matches = await matchesOf(await byContent(copy));
    expect(matches.filter((m) => m.manifestId === manifestId)).toEqual([
      { manifestId, endpoint: `${stack.baseUrl}${API}`, similarityScore: expect.any(Number) },
    ]);
    expect(matches[0]?.manifestId).toBe(manifestId);
    expect(matches[0]!.similarityScore!).toBeGreaterThanOrEqual(byFingerprint[0]!.similarityScore!);
  });

  it('finds it by its watermark when asked for cairn-sync-v2, and not as the older cairn-dct-keyed-v1 or cairn-dct-v1', async () => {
    const reencoded = await sharp(signedBytes).jpeg({ quality: 85 }).toBuffer();
    const matches = await matchesOf(await byContent(reencoded, '?alg=cairn-sync-v2'));
    expect(matches).toEqual([{ manifestId, endpoint: `${stack.baseUrl}${API}`, similarityScore: expect.any(Number) }]);
    expect(await matchesOf(await byContent(reencoded, '?alg=cairn-dct-keyed-v1'))).toEqual([]);
    expect(await matchesOf(await byContent(reencoded, '?alg=cairn-dct-v1'))).toEqual([]);
  });

  it('takes a multipart upload too', async () => {
    const res = await stack.request(`${API}/matches/byContent`, {
      method: 'POST',
      body: multipart({}, { field: 'file', bytes: copy, name: 'q.jpg', type: 'image/jpeg' }),
    });
    expect((await matchesOf(res))[0]?.manifestId).toBe(manifestId);
  });

  it('finds nothing for a different image', async () => {
    const different = await sharp(await readFile(`${PHOTOS}/coffee.png`))
      .jpeg()
      .toBuffer();
    expect(await matchesOf(await byContent(different))).toEqual([]);
    expect(await matchesOf(await byContent(different, '?alg=cairn-dct-v1'))).toEqual([]);
    expect(await matchesOf(await byContent(different, '?alg=cairn-dct-keyed-v1'))).toEqual([]);
    expect(await matchesOf(await byContent(different, '?alg=cairn-sync-v2'))).toEqual([]);
  });

  it('refuses what is not an asset', async () => {
    await expectProblem(await byContent(Buffer.alloc(0)), 400, 'cairn.validation.invalid_body');
    await expectProblem(await byContent(Buffer.from('{"a":1}'), '', 'application/json'), 415);
    await expectProblem(await stack.request(`${API}/matches/byContent`, { method: 'POST', body: copy }), 415);
    const garbage = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 131 + 7) % 256));
    await expectProblem(await byContent(garbage, '', 'image/jpeg'), 415, 'cairn.verify.unsupported_file_type');
    await expectProblem(
      await byContent(garbage, '?alg=cairn-dct-v1', 'image/jpeg'),
      415,
      'cairn.verify.unsupported_file_type',
    );
    await expectProblem(await byContent(copy, '?alg=md5'), 400, 'cairn.validation.invalid_body');
    await expectProblem(await byContent(copy, '?maxResults=0'), 400, 'cairn.validation.invalid_body');
    await expectProblem(await byContent(copy, '?maxResults=ten'), 400, 'cairn.validation.invalid_body');
  });

  it('is rate limited per address like the other public endpoints', async () => {
    const res = await byContent(copy);
    expect(res.headers.get('ratelimit-limit')).toBe('1000');
    expect(Number(res.headers.get('ratelimit-remaining'))).toBeLessThan(1000);
  });
});

describe(`${API}/matches/byBinding`, () => {
  it('finds the manifest by a cairn.pdq.v1 fingerprint, base64 (the spec’s form) or hex (Cairn’s)', async () => {
    const bits = Buffer.from((await hashImageBytes(copy)).bits);
    const viaBase64 = await matchesOf(await byBinding('cairn.pdq.v1', bits.toString('base64')));
    expect(viaBase64[0]).toEqual({
      manifestId,
      endpoint: `${stack.baseUrl}${API}`,
      similarityScore: expect.any(Number),
    });
    expect((await matchesOf(await byBinding('cairn.pdq.v1', bits.toString('base64url'))))[0]?.manifestId).toBe(
      manifestId,
    );
    expect(
      (await matchesOf(await byBinding('cairn.pdq.v1', bits.toString('hex'), '&maxResults=3')))[0]?.manifestId,
    ).toBe(manifestId);
    const post = await stack.request(`${API}/matches/byBinding?maxResults=5`, {
      method: 'POST',
      json: { alg: 'cairn.pdq.v1', value: bits.toString('base64') },
    });
    expect((await matchesOf(post))[0]?.manifestId).toBe(manifestId);
  });

  it('finds the manifest by the watermark payload its soft-binding assertion names, under that algorithm only', async () => {
    const store = Buffer.from(await (await stack.request(`/v1/manifests/${manifestId}`)).arrayBuffer());
    const binding = watermarkBindingOf(store);
    expect(binding.alg).toBe('cairn-sync-v2');
    const payload = Buffer.from(binding.payloadHex, 'hex');
    expect(await matchesOf(await byBinding('cairn-sync-v2', payload.toString('base64')))).toEqual([
      { manifestId, endpoint: `${stack.baseUrl}${API}` },
    ]);
    expect((await matchesOf(await byBinding('cairn-sync-v2', payload.toString('hex'))))[0]?.manifestId).toBe(
      manifestId,
    );
    expect(await matchesOf(await byBinding('cairn-dct-keyed-v1', payload.toString('base64')))).toEqual([]);
    expect(await matchesOf(await byBinding('cairn-dct-v1', payload.toString('base64')))).toEqual([]);
  });

  it('finds nothing for another image’s fingerprint or an unknown payload', async () => {
    const different = await sharp(await readFile(`${PHOTOS}/coffee.png`))
      .jpeg()
      .toBuffer();
    const bits = Buffer.from((await hashImageBytes(different)).bits);
    expect(await matchesOf(await byBinding('cairn.pdq.v1', bits.toString('base64')))).toEqual([]);
    expect(await matchesOf(await byBinding('cairn-dct-v1', Buffer.alloc(8, 7).toString('base64')))).toEqual([]);
  });

  it('an algorithm Cairn does not compute is looked up in the repository only: no match here, not an error', async () => {
    const value = Buffer.alloc(32, 1).toString('base64');
    expect(await matchesOf(await byBinding('md5', value))).toEqual([]);
  });

  it('answers 400 Problem+JSON for malformed queries, never a 500', async () => {
    const value = Buffer.alloc(32, 1).toString('base64');
    const bad = [
      `${API}/matches/byBinding`,
      `${API}/matches/byBinding?alg=cairn.pdq.v1`,
      `${API}/matches/byBinding?value=${encodeURIComponent(value)}`,
      `${API}/matches/byBinding?alg=cairn.pdq.v1&value=%%%%`,
      `${API}/matches/byBinding?alg=cairn.pdq.v1&value=${encodeURIComponent(Buffer.alloc(31).toString('base64'))}`,
      `${API}/matches/byBinding?alg=cairn-dct-v1&value=${encodeURIComponent(value)}`,
      `${API}/matches/byBinding?alg=cairn.pdq.v1&value=${encodeURIComponent(value)}&maxResults=-1`,
      `${API}/matches/byBinding?alg=cairn.pdq.v1&value=${encodeURIComponent(value)}&maxResults=1.5`,
      `${API}/matches/byBinding?alg=cairn.pdq.v1&alg=cairn-dct-v1&value=${encodeURIComponent(value)}`,
    ];
    for (const path of bad) await expectProblem(await stack.request(path), 400, 'cairn.validation.invalid_body');
    const post = (init: { json?: unknown; headers?: Record<string, string>; body?: string }) =>
      stack.request(`${API}/matches/byBinding`, { method: 'POST', ...init });
    // Bodies that are no binding query: a query without a value, an array, JSON cut short.
    for (const init of [
      { json: { alg: 'cairn.pdq.v1' } },
      { json: [1, 2] },
      { headers: { 'content-type': 'application/json' }, body: '{"alg":' },
    ])
      await expectProblem(await post(init), 400, 'cairn.validation.invalid_body');
    await expectProblem(await post({ headers: { 'content-type': 'text/plain' }, body: 'x' }), 415);
  });
});

describe(`POST ${API}/matches/byReference`, () => {
  // The referenced asset is served by this test on loopback (allowed outside production); everything else named
  // here is refused by the address policy before any connection is made.
  let server: Server;
  let origin: string;
  const uploadsDir = () => join(fileURLToPath(String(stack.env.BLOB_STORE_URL)), 'public', 'uploads');
  const byReference = (json: unknown, query = '') =>
    stack.request(`${API}/matches/byReference${query}`, { method: 'POST', json });
  /** Fetches of /slow.jpg waiting to be finished. */
  const held: Array<() => void> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = req.url ?? '/';
      if (path === '/photo.jpg') return res.writeHead(200, { 'content-type': 'image/jpeg' }).end(copy);
      if (path === '/slow.jpg') {
        // Headers and half the bytes now, the rest when the test lets go: a fetch held open.
        res.writeHead(200, { 'content-type': 'image/jpeg' }).write(copy.subarray(0, copy.length >> 1));
        return void held.push(() => res.end(copy.subarray(copy.length >> 1)));
      }
      if (path === '/hop') return res.writeHead(302, { location: '/photo.jpg' }).end();
      if (path === '/loop') return res.writeHead(302, { location: '/loop' }).end();
      if (path === '/to-private') return res.writeHead(302, { location: 'http://10.0.0.1/photo.jpg' }).end();
      if (path === '/to-metadata')
        return res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      res.writeHead(404).end('no');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('fetches the asset and answers as byContent, through a redirect too, leaving no upload behind', async () => {
    const direct = await matchesOf(
      await byReference({ referenceUrl: `${origin}/photo.jpg`, assetLength: copy.length }),
    );
    expect(direct[0]?.manifestId).toBe(manifestId);
    const hopped = await matchesOf(
      await byReference(
        { referenceUrl: `${origin}/hop`, assetLength: copy.length, assetType: 'image/jpeg', region: [] },
        '?alg=cairn.pdq.v1&maxResults=1',
      ),
    );
    expect(hopped).toEqual([{ manifestId, endpoint: `${stack.baseUrl}${API}`, similarityScore: expect.any(Number) }]);
    expect(await readdir(uploadsDir())).toEqual([]);
  });

  it('refuses private and metadata addresses, directly or by redirect, naming no address (502)', async () => {
    for (const referenceUrl of [
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/photo.jpg',
      'http://[::ffff:10.0.0.1]/photo.jpg',
      `${origin}/to-private`,
      `${origin}/to-metadata`,
    ]) {
      const problem = await (async () => {
        const res = await byReference({ referenceUrl, assetLength: 1000 });
        expect(res.status).toBe(502);
        return (await res.json()) as { code: string; detail: string };
      })();
      expect(problem.code).toBe('cairn.resolution.fetch_failed');
      expect(problem.detail).toContain('refused by the outbound address policy');
      expect(problem.detail).not.toMatch(/169\.254|10\.0\.0\.1|ffff/);
    }
  });

  it('bounds the fetch: more bytes than assetLength, a redirect loop, an error answer are 502; a huge assetLength 413', async () => {
    const tooLong = await byReference({ referenceUrl: `${origin}/photo.jpg`, assetLength: 1000 });
    await expectProblem(tooLong, 502, 'cairn.resolution.fetch_failed');
    await expectProblem(
      await byReference({ referenceUrl: `${origin}/loop`, assetLength: 1000 }),
      502,
      'cairn.resolution.fetch_failed',
    );
    await expectProblem(
      await byReference({ referenceUrl: `${origin}/missing`, assetLength: 1000 }),
      502,
      'cairn.resolution.fetch_failed',
    );
    await expectProblem(
      await byReference({ referenceUrl: `${origin}/photo.jpg`, assetLength: 1024 ** 4 }),
      413,
      'cairn.validation.body_too_large',
    );
    expect(await readdir(uploadsDir())).toEqual([]);
  });

  it('runs at most REFERENCE_FETCHES_AT_ONCE fetches: one more is 503 with Retry-After at once, the held ones answer', async () => {
    const slow = () => byReference({ referenceUrl: `${origin}/slow.jpg`, assetLength: copy.length });
    const first = [slow(), slow()];
    await waitFor('both fetches held open', () => held.length === 2);
    const refused = await byReference({ referenceUrl: `${origin}/photo.jpg`, assetLength: copy.length });
    await expectProblem(refused, 503, 'cairn.unavailable');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    for (const finish of held.splice(0)) finish();
    for (const answer of await Promise.all(first)) expect((await matchesOf(answer))[0]?.manifestId).toBe(manifestId);
    // The slots are given back: the next fetch runs.
    const after = await byReference({ referenceUrl: `${origin}/photo.jpg`, assetLength: copy.length });
    expect((await matchesOf(after))[0]?.manifestId).toBe(manifestId);
    expect(await readdir(uploadsDir())).toEqual([]);
  });

  it('refuses a malformed reference (400) and a body that is not JSON (415)', async () => {
    for (const json of [
      {},
      { referenceUrl: 'ftp://example.com/a.jpg', assetLength: 10 },
      { referenceUrl: 'file:///etc/passwd', assetLength: 10 },
      { referenceUrl: 'not a url', assetLength: 10 },
      { referenceUrl: `${origin}/photo.jpg`, assetLength: -1 },
      { referenceUrl: `${origin}/photo.jpg`, assetLength: 1.5 },
      { referenceUrl: `${origin}/photo.jpg` },
    ])
      await expectProblem(await byReference(json), 400, 'cairn.validation.invalid_body');
    await expectProblem(
      await byReference({ referenceUrl: `${origin}/photo.jpg`, assetLength: copy.length }, '?alg=md5'),
      400,
      'cairn.validation.invalid_body',
    );
    await expectProblem(
      await stack.request(`${API}/matches/byReference`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: `${origin}/photo.jpg`,
      }),
      415,
    );
  });
});

describe('a tenant storing a copy of a Cairn-signed manifest', () => {
  it('is listed after Cairn’s own match, and changes neither what the label resolves to nor content lookups', async () => {
    const attacker = await onboard(stack);
    // What the public verify says of the signed file and of its stripped copy, before and after the upload.
    const verdicts = async () => {
      const out: Array<{ status: unknown; matches: unknown }> = [];
      for (const bytes of [signedBytes, copy]) {
        const res = await stack.request('/v1/verify', {
          method: 'POST',
          body: multipart({}, { field: 'file', bytes, name: 'v.jpg', type: 'image/jpeg' }),
        });
        expect(res.status).toBe(200);
        const verdict = (await res.json()) as { status: unknown; matches: unknown };
        out.push({ status: verdict.status, matches: verdict.matches });
      }
      return out;
    };
    const before = await verdicts();
    // The stripped copy is found by its soft bindings: Cairn's asset is what it leads to.
    expect(JSON.stringify(before[1]!.matches)).toContain(signed.asset_id);
    const store = Buffer.from(await (await stack.request(`/v1/manifests/${manifestId}`)).arrayBuffer());
    const stored = await stack.request(`${API}/manifests`, {
      method: 'POST',
      key: attacker.api_key,
      headers: { 'content-type': 'application/c2pa' },
      body: store,
    });
    expect(stored.status).toBe(200);
    const copyId = ((await stored.json()) as { manifestId: string }).manifestId;
    expect(copyId).toMatch(/^sm_/);
    // Its soft-binding assertion was read and bound (Cairn writes the watermark payload as hex): the value finds
    // Cairn's manifest first (the watermark registry), the stored copy after it.
    const { alg, payloadHex } = watermarkBindingOf(store);
    expect((await matchesOf(await byBinding(alg, payloadHex))).map((m) => m.manifestId)).toEqual([manifestId, copyId]);
    // The attacker binds the asset's fingerprint too: still after Cairn's own match.
    const bits = Buffer.from((await hashImageBytes(signedBytes)).bits).toString('hex');
    const bound = await stack.request(`${API}/bindings`, {
      method: 'POST',
      key: attacker.api_key,
      json: { bindingValue: bits, manifestId: copyId, alg: 'cairn.pdq.v1' },
    });
    expect(bound.status).toBe(204);
    expect((await matchesOf(await byBinding('cairn.pdq.v1', bits)))[0]?.manifestId).toBe(manifestId);
    // Content lookups never see stored manifests; the label still resolves to Cairn's manifest, byte for byte.
    expect((await matchesOf(await byContent(copy))).map((m) => m.manifestId)).not.toContain(copyId);
    const label = activeManifestLabel(store)!;
    for (const path of [
      `${API}/manifests/${encodeURIComponent(label)}`,
      `/v1/manifests/${encodeURIComponent(label)}`,
    ]) {
      const res = await stack.request(path);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(store)).toBe(true);
    }
    // Verify verdicts are Cairn's alone: the same as before, and no word of the stored copy.
    const after = await verdicts();
    expect(after).toEqual(before);
    expect(JSON.stringify(after)).not.toContain(copyId);
    // The owner of the Cairn manifest cannot delete the copy either: it is the attacker's (only the attacker can).
    expect((await stack.request(`${API}/manifests/${copyId}`, { method: 'DELETE', key: owner.api_key })).status).toBe(
      404,
    );
    expect(
      (await stack.request(`${API}/manifests/${copyId}`, { method: 'DELETE', key: attacker.api_key })).status,
    ).toBe(204);
    expect((await matchesOf(await byBinding(alg, payloadHex))).map((m) => m.manifestId)).toEqual([manifestId]);
  });
});

describe(`GET ${API}/manifests/{manifestId}`, () => {
  it('answers the manifest store of a match, as application/c2pa, the same bytes as /v1/manifests', async () => {
    const [match] = await matchesOf(await byContent(copy));
    const res = await stack.request(`${API}/manifests/${match!.manifestId}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/c2pa');
    const bytes = Buffer.from(await res.arrayBuffer());
    const own = Buffer.from(await (await stack.request(`/v1/manifests/${manifestId}`)).arrayBuffer());
    expect(bytes.equals(own)).toBe(true);
    expect(activeManifestLabel(bytes)).toMatch(/^urn:c2pa:/);
  });

  it('honours returnActiveManifest: a store holding the active manifest only', async () => {
    const full = Buffer.from(await (await stack.request(`${API}/manifests/${manifestId}`)).arrayBuffer());
    const res = await stack.request(`${API}/manifests/${manifestId}?returnActiveManifest=true`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/c2pa');
    const active = Buffer.from(await res.arrayBuffer());
    expect(manifestLabels(active)).toEqual([activeManifestLabel(full)]);
    expect((await stack.request(`${API}/manifests/${manifestId}?returnActiveManifest=false`)).status).toBe(200);
  });

  it('returnActiveManifest leaves out the ingredient manifests of a store that has them', async () => {
    // Cairn's own stores hold one manifest, where ignoring the parameter would pass; so do the c2pa-rs fixtures
    // (CA.jpg's ingredient carries none). A store with an ingredient manifest is made with c2pa-node: the
    // Cairn-signed file edited and re-signed by another signer, with the original as its parent ingredient,
    // then registered as a Cairn manifest record.
    const store = extractManifestStore(bufferAccess(await editedWithParent(signedBytes)));
    if (!store) throw new Error('the edited file carries no manifest store');
    const labels = manifestLabels(store);
    expect(labels).toHaveLength(2);
    const peerId = newId('manifest');
    const blobKey = `manifests/test/${peerId}.c2pa`;
    await createBlobStore(String(stack.env.BLOB_STORE_URL)).put(blobKey, store, { contentType: 'application/c2pa' });
    const admin = await stack.sandbox.adminClient();
    try {
      const inserted = await admin.query(
        'insert into signer.manifests (manifest_id, asset_id, tenant_id, blob_key, label, size_bytes) select $1, asset_id, tenant_id, $2, $3, $4 from signer.manifests where manifest_id = $5',
        [peerId, blobKey, activeManifestLabel(store), store.length, manifestId],
      );
      expect(inserted.rowCount).toBe(1);
    } finally {
      await admin.end();
    }

    const full = Buffer.from(await (await stack.request(`${API}/manifests/${peerId}`)).arrayBuffer());
    expect(full.equals(store)).toBe(true);
    const res = await stack.request(`${API}/manifests/${peerId}?returnActiveManifest=true`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/c2pa');
    const active = Buffer.from(await res.arrayBuffer());
    expect(manifestLabels(active)).toEqual([activeManifestLabel(store)]);
    expect(activeManifestLabel(active)).toBe(activeManifestLabel(store));
    expect(active.length).toBeLessThan(store.length);
  });

  it('answers 400 for a malformed parameter and 404 for any manifest it does not hold (API 2.4), whatever its form', async () => {
    await expectProblem(await stack.request(`${API}/manifests/not-a-manifest`), 404, 'cairn.not_found');
    await expectProblem(
      await stack.request(`${API}/manifests/${manifestId}?returnActiveManifest=maybe`),
      400,
      'cairn.validation.invalid_body',
    );
    await expectProblem(await stack.request(`${API}/manifests/m_01ARZ3NDEKTSV4RRFFQ69G5FAV`), 404, 'cairn.not_found');
  });
});

describe(`POST ${API}/matches/byContent uploads`, () => {
  /** Where the gateway puts anonymous uploads: `<blob root>/public/uploads/`. */
  const uploadsDir = () => join(fileURLToPath(String(stack.env.BLOB_STORE_URL)), 'public', 'uploads');

  it('are gone from the blob store once the answer arrives, found or refused', async () => {
    expect((await matchesOf(await byContent(copy))).length).toBeGreaterThan(0);
    // The upload landed here (the directory exists) and was removed before the answer.
    expect(await readdir(uploadsDir())).toEqual([]);
    const garbage = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 131 + 7) % 256));
    await expectProblem(await byContent(garbage), 415, 'cairn.verify.unsupported_file_type');
    await expectProblem(await byContent(copy, '?alg=md5'), 400, 'cairn.validation.invalid_body');
    expect(await readdir(uploadsDir())).toEqual([]);
  });
});

describe(`the ${API} per-address limit (PUBLIC_RESOLUTION_PER_MINUTE)`, () => {
  const LIMIT = 3;
  // The test's own client addresses (TRUST_PROXY=loopback lets the tests name them), so the buckets start full.
  const from = (address: string) => ({ 'x-forwarded-for': address });
  const query = `${API}/matches/byBinding?alg=cairn.pdq.v1&value=${'00'.repeat(32)}`;

  beforeAll(async () => {
    stack.env.PUBLIC_RESOLUTION_PER_MINUTE = String(LIMIT);
    await stack.stopService('gateway');
    await stack.restart('gateway');
  }, 60_000);
  afterAll(async () => {
    stack.env.PUBLIC_RESOLUTION_PER_MINUTE = '1000';
    await stack.stopService('gateway');
    await stack.restart('gateway');
  }, 60_000);

  it('answers 429 Problem+JSON with Retry-After once an address has used its queries; other addresses are unaffected', async () => {
    const address = '198.51.100.7';
    for (let n = 1; n <= LIMIT; n++) {
      const res = await stack.request(query, { headers: from(address) });
      expect([n, res.status, res.headers.get('ratelimit-limit')]).toEqual([n, 200, String(LIMIT)]);
    }
    const refused = await stack.request(query, { headers: from(address) });
    await expectProblem(refused, 429, 'cairn.ratelimit.exceeded');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // Every /matches/* query shares the bucket.
    const upload = await stack.request(`${API}/matches/byContent`, {
      method: 'POST',
      headers: { ...from(address), 'content-type': 'image/jpeg' },
      body: copy,
    });
    await expectProblem(upload, 429, 'cairn.ratelimit.exceeded');
    expect(upload.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    // Per address: another caller still gets answers.
    expect((await stack.request(query, { headers: from('198.51.100.8') })).status).toBe(200);
    // Manifest fetches and the algorithm list are not limited.
    expect((await stack.request(`${API}/manifests/${manifestId}`, { headers: from(address) })).status).toBe(200);
    expect((await stack.request(`${API}/services/supportedAlgorithms`, { headers: from(address) })).status).toBe(200);
  });
});
