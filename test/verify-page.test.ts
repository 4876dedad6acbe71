import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, watchedPage } from './support/browser.js';
import { multipart, onboard, signAndFetch, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';
import { recording } from './support/audio.js';

const OUT = new URL('../tools/out/', import.meta.url);
const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
let stack: Stack;
let browser: Browser;
let tenant: { api_key: string };
let signed: { asset_id: string; verifier_url: string; manifest_id: string };
const files: Record<'signed' | 'reencoded' | 'tampered' | 'unrelated', string> = {
  signed: '',
  reencoded: '',
  tampered: '',
  unrelated: '',
};

beforeAll(async () => {
  // Enough public verifies for every case in this file from one address; a public upload limit a test can pass.
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], {
    PUBLIC_VERIFY_PER_MINUTE: '50',
    PUBLIC_VERIFY_MAX_BYTES: String(2 * 1024 * 1024),
  });
  tenant = await onboard(stack);
  const photo = await sharp(await readFile(`${PHOTOS}/astronaut.png`))
    .jpeg({ quality: 90 })
    .toBuffer();
  let signedBytes: Buffer;
  ({ signed, signedBytes } = await signAndFetch<typeof signed>(stack, tenant.api_key, {
    recipe: 'image-genai-v1',
    metadata: { generator: 'Orbit Studio', model: 'orbit-xl-2' },
    bytes: photo,
    name: 'a.jpg',
  }));
  // Re-encoding drops the JUMBF manifest store; the watermark in the pixels survives.
  const reencoded = await sharp(signedBytes).jpeg({ quality: 90 }).toBuffer();
  // Flipped bytes in the COSE signature near the end of the manifest store.
  const manifest = Buffer.from(await (await stack.request(`/v1/manifests/${signed.manifest_id}`)).arrayBuffer());
  const at = signedBytes.indexOf(manifest);
  const tampered = Buffer.from(signedBytes);
  for (let i = 0; i < 8; i++)
    tampered[at + manifest.length - 40 - i] = (tampered[at + manifest.length - 40 - i] ?? 0) ^ 0xff;
  const unrelated = await sharp(await readFile(`${PHOTOS}/coffee.png`))
    .jpeg()
    .toBuffer();
  const dir = join(tmpdir(), `cairn-verify-page-${crypto.randomUUID()}`);
  await mkdir(dir, { recursive: true });
  for (const [name, bytes] of Object.entries({ signed: signedBytes, reencoded, tampered, unrelated })) {
    const path = join(dir, `${name}.jpg`);
    await writeFile(path, bytes);
    files[name as keyof typeof files] = path;
  }
  browser = await launchChromium();
  await mkdir(OUT, { recursive: true });
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

function newPage(javaScriptEnabled: boolean): Promise<{ page: Page; errors: string[] }> {
  return watchedPage(browser, { javaScriptEnabled, viewport: { width: 900, height: 1200 } });
}

/** Drops a file on the form the way a browser does: a `drop` event carrying a DataTransfer with the file. */
async function dropFile(page: Page, path: string, name: string, mediaType = 'image/jpeg'): Promise<void> {
  const base64 = (await readFile(path)).toString('base64');
  const transfer = await page.evaluateHandle(
    ({ data, fileName, type }) => {
      // Runs in the page, where DataTransfer exists (the test's own typings have no DOM).
      const Transfer = (globalThis as unknown as { DataTransfer: new () => { items: { add(file: File): void } } })
        .DataTransfer;
      const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
      const dt = new Transfer();
      dt.items.add(new File([bytes], fileName, { type }));
      return dt;
    },
    { data: base64, fileName: name, type: mediaType },
  );
  await page.locator('#verify-form').dispatchEvent('drop', { dataTransfer: transfer });
  await resultShown(page);
}

/** The form page has no verdict; the server-rendered result page has one. */
async function resultShown(page: Page): Promise<void> {
  await page.waitForSelector('h1[data-status]', { timeout: 50_000 });
  await page.waitForLoadState('load');
}

async function screenshot(page: Page, name: string): Promise<void> {
  const path = new URL(name, OUT).pathname;
  await page.screenshot({ path, fullPage: true });
  expect((await readFile(path)).length).toBeGreaterThan(10_000);
}

describe('the public verify page /verify', () => {
  it('serves an accessible form with its script from the gateway only', async () => {
    const res = await fetch(`${stack.baseUrl}/verify`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("form-action 'self'");
    const html = await res.text();
    expect(html).toContain('<html lang="en">');
    expect(html).toMatch(/<label for="file">/);
    expect(html).toMatch(/<form[^>]+method="post"[^>]+action="\/verify"[^>]+enctype="multipart\/form-data"/);
    expect(html).toContain('<script src="/verify/drop.js" defer></script>');
    const script = await fetch(`${stack.baseUrl}/verify/drop.js`);
    expect(script.headers.get('content-type')).toContain('text/javascript');
    expect(await script.text()).toContain("addEventListener('drop'");
  });

  it('a signed file dropped on the page: Verified, with signer, AI origin, proves / does not prove and the thumbnail', async () => {
    const { page, errors } = await newPage(true);
    await page.goto(`${stack.baseUrl}/verify`, { waitUntil: 'load' });
    await dropFile(page, files.signed, 'signed.jpg');
    expect(await page.locator('h1').getAttribute('data-status')).toBe('verified_manifest_and_watermark_match');
    expect(await page.locator('h1').innerText()).toBe('Verified');
    expect(await page.locator('th:text-is("Signed by") + td').innerText()).toMatch(/Cairn/);
    expect(await page.locator('th:text-is("Signed on") + td').innerText()).toMatch(/\w{3}, \d{2} \w{3} \d{4}/);
    expect(await page.locator('th:text-is("AI-generated") + td').innerText()).toBe(
      'Yes — declared AI-generated by the signer',
    );
    expect(await page.locator('th:text-is("Generator") + td').innerText()).toBe('Orbit Studio');
    expect(await page.locator('h2:text-is("What this does not prove") + ul li').count()).toBeGreaterThan(0);
    const thumb = page.locator('img.thumb');
    expect(await thumb.getAttribute('src')).toBe(`${stack.baseUrl}/v/${signed.asset_id}/thumbnail.jpg`);
    expect(
      await thumb.evaluate((element) => {
        const img = element as unknown as { complete: boolean; naturalWidth: number };
        return img.complete && img.naturalWidth > 0;
      }),
    ).toBe(true);
    expect(await page.locator('code', { hasText: 'signed.jpg' }).count()).toBe(1);
    expect(errors).toEqual([]);
    await screenshot(page, 'verify-page-signed.png');
  }, 60_000);

  it('a re-encoded copy (manifest stripped): watermark_only, linking to the original’s /v/ page', async () => {
    const { page, errors } = await newPage(true);
    await page.goto(`${stack.baseUrl}/verify`, { waitUntil: 'load' });
    await dropFile(page, files.reencoded, 'reencoded.jpg');
    expect(await page.locator('h1').getAttribute('data-status')).toBe('watermark_only');
    const link = page.locator('ul.matches a');
    expect(await link.getAttribute('href')).toBe(signed.verifier_url);
    expect(
      await page
        .locator('img.thumb')
        .evaluate((element) => (element as unknown as { naturalWidth: number }).naturalWidth > 0),
    ).toBe(true);
    await screenshot(page, 'verify-page-reencoded.png');
    // The match leads to the signed original's own page.
    await Promise.all([page.waitForURL(signed.verifier_url), link.click()]);
    expect(await page.locator('h1').getAttribute('data-status')).toBe('verified_manifest_and_watermark_match');
    expect(errors).toEqual([]);
  }, 60_000);

  it('a tampered copy picked with the file chooser and the keyboard: Tampered', async () => {
    const { page, errors } = await newPage(true);
    await page.goto(`${stack.baseUrl}/verify`, { waitUntil: 'load' });
    await page.getByLabel('Choose a file to verify').setInputFiles(files.tampered);
    await page.getByRole('button', { name: 'Verify', exact: true }).focus();
    await page.keyboard.press('Enter');
    await resultShown(page);
    expect(await page.locator('h1').getAttribute('data-status')).toBe('manifest_tampered');
    expect(await page.locator('h1').innerText()).toBe('Tampered');
    expect(errors).toEqual([]);
    await screenshot(page, 'verify-page-tampered.png');
  }, 60_000);

  it('an unrelated photo: No provenance found, no thumbnail, no matches', async () => {
    const { page } = await newPage(true);
    await page.goto(`${stack.baseUrl}/verify`, { waitUntil: 'load' });
    await dropFile(page, files.unrelated, 'coffee.jpg');
    expect(await page.locator('h1').getAttribute('data-status')).toBe('no_provenance');
    expect(await page.locator('h1').innerText()).toBe('No provenance found');
    expect(await page.locator('img.thumb').count()).toBe(0);
    expect(await page.locator('ul.matches').count()).toBe(0);
    await screenshot(page, 'verify-page-unrelated.png');
  }, 60_000);

  it('a signed audio file: the verdict, and no picture at all (the signer makes thumbnails of images only)', async () => {
    // 8 s of speech-like mono audio made here with ffmpeg: under the 2 MiB public verify limit set above.
    const res = await stack.request('/v1/sign', {
      method: 'POST',
      key: tenant.api_key,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: multipart(
        { recipe: 'audio-genai-v1', metadata: JSON.stringify({ generator: 'VoiceGen', model: 'v2' }) },
        { field: 'asset', bytes: await recording('speech', 8, 1), name: 'voice.wav' },
      ),
    });
    expect(res.status).toBe(200);
    const audio = (await res.json()) as { asset_id: string; verifier_url: string; media_type: string };
    expect(audio.media_type).toBe('audio/wav');
    const bytes = Buffer.from(
      await (await stack.request(`/v1/assets/${audio.asset_id}/content`, { key: tenant.api_key })).arrayBuffer(),
    );
    const path = join(tmpdir(), `cairn-verify-page-${crypto.randomUUID()}.wav`);
    await writeFile(path, bytes);

    const { page, errors } = await newPage(true);
    await page.goto(`${stack.baseUrl}/verify`, { waitUntil: 'load' });
    await dropFile(page, path, 'voice.wav', 'audio/wav');
    expect(await page.locator('h1').getAttribute('data-status')).toBe('verified_manifest_and_watermark_match');
    expect(await page.locator('h1').innerText()).toBe('Verified');
    expect(await page.locator('th:text-is("Generator") + td').innerText()).toBe('VoiceGen');
    expect(await page.locator('code', { hasText: 'voice.wav' }).count()).toBe(1);
    // No <img> to break: a thumbnail.jpg of an audio asset would be a 404, which `errors` would also catch.
    expect(await page.locator('img').count()).toBe(0);
    expect(errors).toEqual([]);
    await screenshot(page, 'verify-page-audio.png');
    // The asset's own /v/ page alike.
    expect(await (await fetch(audio.verifier_url)).text()).not.toContain('<img');
  }, 120_000);

  it('works as a plain form post with JavaScript disabled', async () => {
    const { page } = await newPage(false);
    await page.goto(`${stack.baseUrl}/verify`, { waitUntil: 'load' });
    await page.getByLabel('Choose a file to verify').setInputFiles(files.reencoded);
    await page.getByRole('button', { name: 'Verify', exact: true }).click();
    await resultShown(page);
    expect(await page.locator('h1').getAttribute('data-status')).toBe('watermark_only');
    expect(await page.locator('ul.matches a').getAttribute('href')).toBe(signed.verifier_url);
    await screenshot(page, 'verify-page-no-javascript.png');
  }, 60_000);

  it('a post without a file is a readable page with its cairn.* code, not a 500', async () => {
    const res = await fetch(`${stack.baseUrl}/verify`, { method: 'POST', body: multipart({ note: 'no file' }) });
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toContain('data-problem="cairn.verify.no_input"');
    expect(html).toContain('Choose a file to verify');
    const notMultipart = await fetch(`${stack.baseUrl}/verify`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'hello',
    });
    expect(notMultipart.status).toBe(415);
    expect(await notMultipart.text()).toContain('data-problem="cairn.validation.unsupported_media_type"');
  });

  it('a file over the public verify limit is refused with a page (413), like POST /v1/verify', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024, 7);
    const res = await fetch(`${stack.baseUrl}/verify`, {
      method: 'POST',
      body: multipart({}, { field: 'file', bytes: big, name: 'big.bin' }),
    });
    expect(res.status).toBe(413);
    expect(await res.text()).toContain('data-problem="cairn.validation.body_too_large"');
    const api = await fetch(`${stack.baseUrl}/v1/verify`, {
      method: 'POST',
      body: multipart({}, { field: 'file', bytes: big, name: 'big.bin' }),
    });
    expect(api.status).toBe(413);
  });

  it('the /v/ page links to the verify page', async () => {
    const html = await (await fetch(signed.verifier_url)).text();
    expect(html).toContain('href="/verify"');
  });
});
