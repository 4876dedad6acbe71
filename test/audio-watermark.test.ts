import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runFfmpeg, sniffMediaType } from '@cairn/media';
import { recording } from '../services/watermark/test/support/audio.js';
import { lookupFile, untilIndexed } from './support/lookup.js';
import { watermarkBindingOf } from './support/soft-binding.js';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';

let stack: Stack;
let owner: { tenant_id: string; api_key: string };
let signed: { asset_id: string; manifest_id: string; watermark_id: string; media_type: string };
let signedBytes: Buffer;

interface Verification {
  status: string;
  signals: Record<string, unknown>;
  matches: Array<{ asset_id?: string; via?: string }>;
}

async function verifyFile(bytes: Buffer, name: string): Promise<Verification> {
  const res = await stack.request('/v1/verify', {
    method: 'POST',
    body: multipart({}, { field: 'file', bytes, name }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Verification;
}

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    PUBLIC_VERIFY_PER_MINUTE: '1000',
  });
  owner = await onboard(stack);
  // 12 s of speech-like audio, stereo 44.1 kHz 16-bit PCM, made here with ffmpeg.
  const upload = await recording('speech', 12, 2);
  const res = await stack.request('/v1/sign', {
    method: 'POST',
    key: owner.api_key,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: multipart(
      { recipe: 'audio-genai-v1', metadata: JSON.stringify({ generator: 'VoiceGen', model: 'v2' }) },
      { field: 'asset', bytes: upload, name: 'voice.wav' },
    ),
  });
  if (res.status !== 200) throw new Error(`sign: ${res.status} ${await res.text()}`);
  signed = (await res.json()) as typeof signed;
  signedBytes = Buffer.from(
    await (await stack.request(`/v1/assets/${signed.asset_id}/content`, { key: owner.api_key })).arrayBuffer(),
  );
  // A watermark-only lead is checked against the content's fingerprint: wait until the signed clip is indexed.
  await untilIndexed(() => lookupFile(stack, owner.api_key, { bytes: signedBytes, name: 'a.wav' }));
}, 180_000);
afterAll(() => stack?.stop());

describe('audio watermark through HTTP (audio-genai-v1)', () => {
  it('signs a WAV as WAV with a watermark the manifest names (cairn-audio-wm-v1 and its payload)', async () => {
    expect(signed.media_type).toBe('audio/wav');
    expect(signed.watermark_id).toMatch(/^w_/);
    expect(sniffMediaType(signedBytes)?.mediaType).toBe('audio/wav');
    const binding = watermarkBindingOf(
      Buffer.from(await (await stack.request(`/v1/manifests/${signed.manifest_id}`)).arrayBuffer()),
    );
    expect(binding.alg).toBe('cairn-audio-wm-v1');
    expect(binding.payloadHex).toMatch(/^[0-9a-f]{16}$/);
  });

  it('the signed file verifies verified_manifest_and_watermark_match', async () => {
    const result = await verifyFile(signedBytes, 'voice.wav');
    expect(result.signals).toMatchObject({ c2pa_manifest_present: true, c2pa_signature_valid: true });
    expect(result.status).toBe('verified_manifest_and_watermark_match');
  });

  it('the same re-encoded to MP3 128k (manifest gone) verifies watermark_only, naming its asset', async () => {
    const mp3 = await runFfmpeg({
      args: ['-i', 'pipe:0', '-c:a', 'libmp3lame', '-b:a', '128k', '-f', 'mp3', 'pipe:1'],
      input: signedBytes,
    });
    const result = await verifyFile(mp3, 'copy.mp3');
    expect(result.signals.c2pa_manifest_present).toBe(false);
    expect(result.status).toBe('watermark_only');
    expect(result.matches[0]).toMatchObject({ asset_id: signed.asset_id, via: 'watermark' });
  });

  it('unmarked audio of the same kind verifies no_provenance (the detector does not invent a mark)', async () => {
    const other = await recording('music', 8, 2);
    const result = await verifyFile(other, 'other.wav');
    expect(result.status).toBe('no_provenance');
  });
});
