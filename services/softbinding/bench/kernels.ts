// The soft-binding service's layer of a sign, alone, for `bench:fleet-cost` (which runs this as a child process and
// reads its JSON answer): the fingerprints of the signed file the index stores, timed as CPU of this process and
// its reaped children (ffmpeg).
//
//   node --import tsx services/softbinding/bench/kernels.ts <image|song|clip> <signed file> <rounds>
import { readFile } from 'node:fs/promises';
import { answer, kernelMs, type Kernels } from '../../../test/support/kernels.js';
import { fingerprintAudio, fingerprintSoundtrack } from '../src/adapters/audio-fingerprint.js';
import { pdqFingerprinter } from '../src/adapters/image-hash.js';
import { indexHashes } from '../src/adapters/image-variants.js';
import { fingerprintVideo } from '../src/adapters/video-fingerprint.js';

const [kind, path, roundsArg] = process.argv.slice(2);
if (!kind || !path || !roundsArg) throw new Error('usage: kernels.ts <image|song|clip> <signed file> <rounds>');
const rounds = Number(roundsArg);
const signed = await readFile(path);

const layers: Record<string, () => Promise<Kernels>> = {
  image: async () => [
    ['fingerprint (PDQ over the variants)', (await kernelMs(rounds, () => indexHashes(pdqFingerprinter, signed))).ms],
  ],
  song: async () => [['fingerprint', (await kernelMs(rounds, () => fingerprintAudio(signed))).ms]],
  clip: async () => {
    const fingerprint = await kernelMs(rounds, async () => {
      await fingerprintVideo(signed);
      // A sound too sparse to fingerprint is skipped by the service too (its index logs and goes on).
      return fingerprintSoundtrack(signed).catch(() => null);
    });
    return [['fingerprint (frames, sound)', fingerprint.ms]];
  },
};
const run = layers[kind];
if (!run) throw new Error(`unknown kind ${kind}`);
answer(await run());
