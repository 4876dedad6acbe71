import { expect } from '@jest/globals';
import { lookupFile, untilIndexed } from './lookup.js';
import { multipart, signAndFetch, type Stack } from './stack.js';

/** What the audio and video watermark tests read of `POST /v1/verify`. */
export interface Verification {
  status: string;
  asset_id?: string;
  confidence: number | null;
  developer_explanation: string;
  signals: Record<string, unknown>;
  warnings: string[];
  matches: Array<{ asset_id?: string; via?: string }>;
}

export interface SignedAsset {
  asset_id: string;
  manifest_id: string;
  watermark_id: string;
  media_type: string;
}

/** A public `POST /v1/verify` of a file; it must answer 200. */
export async function verifyFile(stack: Stack, bytes: Buffer, name: string): Promise<Verification> {
  const res = await stack.request('/v1/verify', {
    method: 'POST',
    body: multipart({}, { field: 'file', bytes, name }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Verification;
}

/**
 * Signs `bytes` under `recipe`, fetches the signed content, and waits until the soft-binding service has indexed
 * it: a watermark-only lead is checked against the content's fingerprint, so a verify before that names nothing.
 */
export async function signAndIndex(
  stack: Stack,
  apiKey: string,
  upload: { recipe: string; metadata: Record<string, string>; bytes: Buffer; name: string },
): Promise<{ signed: SignedAsset; signedBytes: Buffer }> {
  const { signed, signedBytes } = await signAndFetch<SignedAsset>(stack, apiKey, upload);
  const extension = upload.name.slice(upload.name.lastIndexOf('.'));
  await untilIndexed(() => lookupFile(stack, apiKey, { bytes: signedBytes, name: `a${extension}` }));
  return { signed, signedBytes };
}
