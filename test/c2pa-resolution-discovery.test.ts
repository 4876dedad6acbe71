import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { activeManifestLabel } from '../packages/jumbf/src/index.js';
import { photoJpeg } from './support/photos.js';
import { onboard, signAndFetch, startStack, type Stack } from './support/stack.js';

// The C2PA Soft Binding Resolution API 2.4 — discovery, capabilities, status, 404 for unknown
// manifests, and the C2PA manifest label (URN) accepted wherever Cairn's manifest id is.

let stack: Stack;
let signed: { asset_id: string; manifest_id: string };
let label: string;
let store: Buffer;

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway']);
  const tenant = await onboard(stack);
  const photo = await photoJpeg('camera', 90);
  ({ signed } = await signAndFetch<typeof signed>(stack, tenant.api_key, {
    recipe: 'image-genai-v1',
    bytes: photo,
    name: 'p.jpg',
  }));
  store = Buffer.from(await (await stack.request(`/v1/manifests/${signed.manifest_id}`)).arrayBuffer());
  label = activeManifestLabel(store) ?? '';
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

describe('Soft Binding Resolution API 2.4', () => {
  it('serves the discovery document at the root, pointing at the API, capabilities and status', async () => {
    const res = await stack.request('/.well-known/c2pa-soft-binding-resolution');
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, string>;
    expect(body).toEqual({
      apiEndpoint: `${stack.baseUrl}/c2pa/v1`,
      c2paSpecificationVersion: '2.4.0',
      capabilitiesEndpoint: `${stack.baseUrl}/c2pa/v1/services/capabilities`,
      statusEndpoint: `${stack.baseUrl}/c2pa/v1/services/status`,
    });
    const capabilities = (await (await fetch(body.capabilitiesEndpoint!)).json()) as Record<string, unknown>;
    expect(capabilities).toEqual({
      c2paSpecificationVersion: '2.4.0',
      supportedCapabilities: ['queryByContent', 'queryByReference', 'storeManifests', 'storeBindings'],
    });
  });

  it('reports ok, degraded without the watermark service, down without the signer', async () => {
    const status = async () =>
      (await (await stack.request('/c2pa/v1/services/status')).json()) as { status: string; timestamp: string };
    const ok = await status();
    expect(ok.status).toBe('ok');
    expect(Number.isNaN(Date.parse(ok.timestamp))).toBe(false);
    await stack.stopService('watermark');
    try {
      expect((await status()).status).toBe('degraded');
    } finally {
      await stack.restart('watermark');
    }
    await stack.stopService('signer');
    try {
      expect((await status()).status).toBe('down');
    } finally {
      await stack.restart('signer');
    }
  }, 60_000);

  it('fetches a manifest by its C2PA label as by its id, on both manifest routes', async () => {
    expect(label).toMatch(/^urn:(c2pa|uuid):/);
    for (const path of [
      `/c2pa/v1/manifests/${encodeURIComponent(label)}`,
      `/v1/manifests/${encodeURIComponent(label)}`,
    ]) {
      const res = await stack.request(path);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(store)).toBe(true);
    }
  });

  it('answers 404 for any manifest it does not hold, in either form, never 400', async () => {
    for (const id of [
      'urn:c2pa:00000000-0000-4000-8000-000000000000',
      'urn:uuid:00000000-0000-4000-8000-000000000000',
      'm_01JAAAAAAAAAAAAAAAAAAAAAAA',
      'not-a-manifest',
      'urn:c2pa:conformance-does-not-exist',
    ]) {
      const res = await stack.request(`/c2pa/v1/manifests/${encodeURIComponent(id)}`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
  });

  it('a GET query value longer than 2048 characters is 414, with the POST form named', async () => {
    const res = await stack.request(`/c2pa/v1/matches/byBinding?alg=cairn.pdq.v1&value=${'A'.repeat(2049)}`);
    expect(res.status).toBe(414);
    expect(((await res.json()) as { detail: string }).detail).toContain('POST');
  });
});
