import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runFfmpeg, sniffMediaType } from '@cairn/media';
import { recording } from './support/audio.js';
import { watermarkBindingOf } from './support/soft-binding.js';
import { onboard, startStack, type Stack } from './support/stack.js';
import { signAndIndex, verifyFile, type SignedAsset } from './support/watermark-fleet.js';

let stack: Stack;
let owner: { tenant_id: string; api_key: string };
let signed: SignedAsset;
let signedBytes: Buffer;

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    PUBLIC_VERIFY_PER_MINUTE: '1000',
  });
  owner = await onboard(stack);
  // 12 s of speech-like audio, stereo 44.1 kHz 16-bit PCM, made here with ffmpeg.
  const upload = await recording('speech', 12, 2);
  ({ signed, signedBytes } = await signAndIndex(stack, owner.api_key, {
    recipe: 'audio-genai-v1',
    metadata: { generator: 'VoiceGen', model: 'v2' },
    bytes: upload,
    name: 'voice.wav',
  }));
}, 180_000);
afterAll(() => stack?.stop());

describe('audio watermark through HTTP (audio-genai-v1)', () => {
  it('signs a WAV as WAV with a watermark the manifest names (cairn-audio-wm-v3 and its payload)', async () => {
    expect(signed.media_type).toBe('audio/wav');
    expect(signed.watermark_id).toMatch(/^w_/);
    expect(sniffMediaType(signedBytes)?.mediaType).toBe('audio/wav');
    const binding = watermarkBindingOf(
      Buffer.from(await (await stack.request(`/v1/manifests/${signed.manifest_id}`)).arrayBuffer()),
    );
    expect(binding.alg).toBe('cairn-audio-wm-v3');
    expect(binding.payloadHex).toMatch(/^[0-9a-f]{16}$/);
  });

  it('the signed file verifies verified_manifest_and_watermark_match', async () => {
    const result = await verifyFile(stack, signedBytes, 'voice.wav');
    expect(result.signals).toMatchObject({ c2pa_manifest_present: true, c2pa_signature_valid: true });
    expect(result.status).toBe('verified_manifest_and_watermark_match');
  });

  it('the same re-encoded to MP3 128k (manifest gone) verifies watermark_only, naming its asset', async () => {
    const mp3 = await runFfmpeg({
      args: ['-i', 'pipe:0', '-c:a', 'libmp3lame', '-b:a', '128k', '-f', 'mp3', 'pipe:1'],
      input: signedBytes,
    });
    const result = await verifyFile(stack, mp3, 'copy.mp3');
    expect(result.signals.c2pa_manifest_present).toBe(false);
    expect(result.status).toBe('watermark_only');
    expect(result.matches[0]).toMatchObject({ asset_id: signed.asset_id, via: 'watermark' });
  });

  it('unmarked audio of the same kind verifies no_provenance (the detector does not invent a mark)', async () => {
    const other = await recording('music', 8, 2);
    const result = await verifyFile(stack, other, 'other.wav');
    expect(result.status).toBe('no_provenance');
  });
});
