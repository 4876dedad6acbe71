import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFfmpeg } from '@cairn/media';
import { describe, expect, it } from '@jest/globals';
import {
  alignment,
  AudioTooShortError,
  AudioTooSparseError,
  isAudioMatch,
  type AudioFingerprint,
} from '../src/domain/audio.js';
import { fingerprintAudio } from '../src/adapters/audio-fingerprint.js';
import { AUDIO_TRANSFORMS, sonify, wavOf } from './support/audio.js';
import { loadPhotos } from './support/variants.js';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';

const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, min: s[0]!, median: s[s.length >> 1]!, max: s[s.length - 1]! };
};

/**
 * A real recording (c2pa-rs's sample1.wav, 33 s) and the photos played as spectrograms; a photo too flat to give
 * enough landmarks (AudioTooSparseError, as a lookup would answer) is left out and listed.
 */
async function loadClips(): Promise<Array<{ name: string; bytes: Buffer }>> {
  const clips: Array<{ name: string; bytes: Buffer }> = [
    { name: 'sample1', bytes: await readFile(`${SHARED_DIR}/fixtures/c2pa-rs/sample1.wav`) },
  ];
  const sparse: string[] = [];
  for (const photo of await loadPhotos()) {
    const bytes = await sonify(photo.bytes);
    const usable = await fingerprintAudio(bytes).then(
      () => true,
      (error: unknown) => {
        if (!(error instanceof AudioTooSparseError)) throw error;
        return false;
      },
    );
    if (usable) clips.push({ name: `sonified-${photo.name}`, bytes });
    else sparse.push(photo.name);
  }
  console.log(
    `clips: ${clips.map((c) => c.name).join(', ')}; too sparse to fingerprint: ${sparse.join(', ') || 'none'}`,
  );
  return clips;
}

describe('spectral-peak audio fingerprint', () => {
  it('finds re-encoded and edited copies and tells different clips apart (distributions printed for the README)', async () => {
    const clips = await loadClips();
    const refs = new Map<string, AudioFingerprint>();
    for (const c of clips) refs.set(c.name, await fingerprintAudio(c.bytes));
    const lines: string[] = [];
    const missed: string[] = [];
    const confused: string[] = [];
    for (const [name, transform] of Object.entries(AUDIO_TRANSFORMS)) {
      const scores = [];
      for (const c of clips) {
        const query = await fingerprintAudio(await transform(c.bytes));
        const score = alignment(query.landmarks, refs.get(c.name)!.landmarks);
        scores.push(score);
        if (!isAudioMatch(score)) missed.push(`${c.name} after ${name}: ${JSON.stringify(score)}`);
      }
      lines.push(
        `${name}: similarity ${JSON.stringify(summary(scores.map((s) => s.similarity)))} aligned ${JSON.stringify(summary(scores.map((s) => s.aligned)))}`,
      );
    }
    const different = [];
    for (const a of clips) {
      for (const b of clips) {
        if (a === b) continue;
        const score = alignment(refs.get(a.name)!.landmarks, refs.get(b.name)!.landmarks);
        different.push(score);
        if (isAudioMatch(score)) confused.push(`${a.name} ~ ${b.name}: ${JSON.stringify(score)}`);
      }
    }
    lines.push(
      `different clips (ordered pairs): similarity ${JSON.stringify(summary(different.map((s) => s.similarity)))} aligned ${JSON.stringify(summary(different.map((s) => s.aligned)))}`,
    );
    console.log(lines.join('\n'));
    expect(missed).toEqual([]);
    expect(confused).toEqual([]);
  }, 120_000);

  it('locates an excerpt inside the original', async () => {
    const wav = await readFile(`${SHARED_DIR}/fixtures/c2pa-rs/sample1.wav`);
    const full = await fingerprintAudio(wav);
    const { runFfmpeg } = await import('@cairn/media');
    const excerpt = await runFfmpeg({
      args: ['-i', 'pipe:0', '-af', 'atrim=start=12:duration=8', '-f', 'wav', 'pipe:1'],
      input: wav,
    });
    const score = alignment((await fingerprintAudio(excerpt)).landmarks, full.landmarks);
    expect(isAudioMatch(score)).toBe(true);
    expect(score.offsetSeconds).toBeGreaterThan(11.5);
    expect(score.offsetSeconds).toBeLessThan(12.5);
  });

  it('reads AAC in an M4A whose index follows the samples, as ordinary tools write it', async () => {
    const wav = await readFile(`${SHARED_DIR}/fixtures/c2pa-rs/sample1.wav`);
    // ffmpeg's ipod muxer to a file (seekable): the moov box comes after mdat, unlike a fragmented stream.
    const dir = await mkdtemp(join(tmpdir(), 'cairn-m4a-'));
    try {
      await runFfmpeg({
        args: ['-i', 'pipe:0', '-c:a', 'aac', '-b:a', '96k', '-f', 'ipod', join(dir, 'a.m4a')],
        input: wav,
      });
      const m4a = await readFile(join(dir, 'a.m4a'));
      expect(m4a.indexOf('moov')).toBeGreaterThan(m4a.indexOf('mdat'));
      const score = alignment((await fingerprintAudio(m4a)).landmarks, (await fingerprintAudio(wav)).landmarks);
      expect(isAudioMatch(score)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses clips too short to fingerprint, and files that are not audio', async () => {
    await expect(fingerprintAudio(wavOf(new Float32Array(8000)))).rejects.toBeInstanceOf(AudioTooShortError);
    await expect(fingerprintAudio(wavOf(new Float32Array(8000 * 10)))).rejects.toBeInstanceOf(AudioTooSparseError);
    await expect(fingerprintAudio(Buffer.from('this is not audio at all, just some text'))).rejects.toThrow(/ffmpeg/);
  });
});
