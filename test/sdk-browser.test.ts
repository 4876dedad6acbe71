import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { build } from 'esbuild';
import sharp from 'sharp';
import type { Browser } from 'playwright-core';
import { launchChromium } from './support/browser.js';
import { REPO_ROOT } from '@cairn/testing';
import { onboard, postSign, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

let stack: Stack;
let browser: Browser;
let bundle: string;

beforeAll(async () => {
  // Bundled for the browser platform: any Node-only import in the client would fail this build.
  const result = await build({
    entryPoints: [`${REPO_ROOT}/packages/sdk/src/index.ts`],
    bundle: true,
    platform: 'browser',
    format: 'iife',
    globalName: 'Cairn',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  });
  bundle = result.outputFiles[0]!.text;
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway']);
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe('@cairn/sdk in a browser (Chromium)', () => {
  it('verifies a file with the public API and checks a webhook signature, with web APIs only', async () => {
    const tenant = await onboard(stack);
    const photo = await sharp(await readFile(`${SHARED_DIR}/fixtures/photos/chelsea.png`))
      .jpeg({ quality: 90 })
      .toBuffer();
    const res = await postSign(stack, tenant.api_key, { recipe: 'image-genai-v1', bytes: photo, name: 'c.jpg' });
    expect(res.status).toBe(200);
    const signed = (await res.json()) as { asset_id: string };
    const bytes = Buffer.from(
      await (await stack.request(`/v1/assets/${signed.asset_id}/content`, { key: tenant.api_key })).arrayBuffer(),
    );
    const body = '{"event_id":"evt_1","type":"job.completed"}';
    const secret = 'whsec_browser';
    const signature = 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');

    // Same origin as the API (the page is the gateway's), so no CORS is involved; bypassCSP lets the test add the bundle.
    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    await page.goto(`${stack.baseUrl}/verify`);
    await page.addScriptTag({ content: bundle });
    const answer = await page.evaluate(
      async ({ data, webhookBody, header, key, origin }) => {
        type Sdk = {
          CairnClient: new (o: { baseUrl: string }) => {
            verify(i: { file: Uint8Array }): Promise<{ status: string; asset_id?: string }>;
          };
          verifyWebhookSignature(b: string, h: Record<string, string>, s: string): Promise<boolean>;
        };
        const sdk = (globalThis as unknown as { Cairn: Sdk }).Cairn;
        const file = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
        const verdict = await new sdk.CairnClient({ baseUrl: origin }).verify({ file });
        return {
          status: verdict.status,
          assetId: verdict.asset_id,
          good: await sdk.verifyWebhookSignature(webhookBody, { 'X-Cairn-Signature': header }, key),
          forged: await sdk.verifyWebhookSignature(webhookBody + ' ', { 'Cairn-Signature': header }, key),
        };
      },
      { data: bytes.toString('base64'), webhookBody: body, header: signature, key: secret, origin: stack.baseUrl },
    );
    expect(answer).toEqual({
      status: 'verified_manifest_and_watermark_match',
      assetId: signed.asset_id,
      good: true,
      forged: false,
    });
  }, 90_000);
});
